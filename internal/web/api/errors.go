package api

// ErrorBody is every error answer of the API: {"error": "...", "field": "..."}
// (docs/API.md, errors).
type ErrorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"` // the input field at fault, when one is
}
