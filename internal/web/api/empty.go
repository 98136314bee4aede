package api

import "readpast/internal/queue"

// One rule for empty strings in the API (docs/API.md, "Empty strings"): a
// string field left out, or null, takes its default; given as "", it is
// refused with a message that says what to do. "" used to become the
// default for some fields (queue) and to be taken as a value for others
// (unique_key, 1 to 128 bytes by the docs), so a caller could not tell which.

// given reads an optional string field: nil (left out or null) is "", the
// default; "" is refused, naming the field after prefix and saying what
// leaving it out means (leaveOut, e.g. "leave it out for the queue default").
func given(prefix, field string, v *string, leaveOut string) (string, error) {
	switch {
	case v == nil:
		return "", nil
	case *v == "":
		return "", &queue.ValidationError{Field: prefix + field, Reason: "is empty: give a value, or " + leaveOut}
	}
	return *v, nil
}

// givenOrNull is given for a PATCH field, where null sets the default and a
// field left out keeps its value: "" is refused.
func givenOrNull(field string, o optional[string], nullMeans string) error {
	if o.Set && !o.Null && o.V == "" {
		return &queue.ValidationError{Field: field, Reason: "is empty: give a value, null for " + nullMeans + ", or leave it out to keep it"}
	}
	return nil
}
