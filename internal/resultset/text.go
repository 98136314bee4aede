package resultset

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// hexCap bounds the bytes of one binary value rendered: the text kept per
// attempt is MaxBytes, so a longer hex string would only be cut.
const hexCap = MaxBytes / 2

// Hex renders binary data as 0x-prefixed hexadecimal, as SQL Server Management
// Studio shows it; data past what the byte limit could keep is left out and
// the value ends with CutMark.
func Hex(b []byte) string {
	if len(b) > hexCap {
		return "0x" + hex.EncodeToString(b[:hexCap]) + CutMark
	}
	return "0x" + hex.EncodeToString(b)
}

// Kind says how a column's values are written as text, where the driver's
// Go value alone does not tell.
type Kind int

const (
	Plain  Kind = iota // as the value is: []byte holds text (a decimal, a character column)
	Binary             // []byte is binary data: hexadecimal
	Zoned              // a time with its offset (datetimeoffset)
	Date               // a date without a time
	Clock              // a time of day without a date
)

// Text renders a value database/sql scanned into an any: nil (SQL NULL) as
// nil, []byte as hexadecimal for Binary columns (else as the text it is),
// numbers and booleans (bit) as a DBA's tools show them, and times in the
// layout SQL Server Management Studio uses, with the offset only for Zoned.
func Text(v any, k Kind) *string {
	var s string
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		s = v
	case []byte:
		if k == Binary {
			s = Hex(v)
		} else {
			s = string(v)
		}
	case int64:
		s = strconv.FormatInt(v, 10)
	case float64:
		s = strconv.FormatFloat(v, 'g', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(v), 'g', -1, 32)
	case bool:
		if v {
			s = "1"
		} else {
			s = "0"
		}
	case time.Time:
		switch k {
		case Zoned:
			s = v.Format("2006-01-02 15:04:05.9999999 -07:00")
		case Date:
			s = v.Format("2006-01-02")
		case Clock:
			s = v.Format("15:04:05.9999999")
		default:
			s = v.Format("2006-01-02 15:04:05.9999999")
		}
	default:
		s = fmtAny(v)
	}
	return &s
}

// fmtAny renders a value of a type the drivers rarely return.
func fmtAny(v any) string {
	if s, ok := v.(interface{ String() string }); ok {
		return s.String()
	}
	return fmt.Sprint(v)
}
