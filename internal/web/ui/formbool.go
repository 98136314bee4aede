package ui

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"readpast/internal/queue"
)

// formBool reads a checkbox of the dashboard's forms: "true" when ticked,
// nothing when not ("false" is taken too). Any other value is refused (400,
// naming the field) rather than read as false: `transactional=maybe` was
// taken for false (issue 25), and a crafted or mistyped post should not
// silently run a task some other way than asked.
func formBool(c echo.Context, field string) (bool, error) {
	switch v := c.FormValue(field); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, &queue.ValidationError{Field: field, Reason: fmt.Sprintf("is %q: a checkbox sends true when ticked, or nothing", v)}
	}
}

// checkbox is one checkbox of a form and where its value goes.
type checkbox struct {
	field string
	to    *bool
}

// formBools reads the checkboxes in order; the first value that no checkbox
// sends is the error.
func formBools(c echo.Context, boxes ...checkbox) error {
	for _, b := range boxes {
		v, err := formBool(c, b.field)
		if err != nil {
			return err
		}
		*b.to = v
	}
	return nil
}
