package ui

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Live diffs carry only what changed.
func TestDiffView(t *testing.T) {
	t.Parallel()
	old := viewState{order: []string{"3", "2", "1"}, rows: map[string]string{"3": "a", "2": "b", "1": "c"}, sections: map[string]string{"chart": "x"}}
	same := diffView(old, old)
	require.True(t, same.empty(), "nothing changed, nothing to send")
	next := viewState{order: []string{"4", "3", "2"}, rows: map[string]string{"4": "d", "3": "a", "2": "B"}, sections: map[string]string{"chart": "y"}}
	d := diffView(old, next)
	require.Equal(t, []string{"4", "3", "2"}, d.Order)
	require.Equal(t, map[string]string{"4": "d", "2": "B"}, d.Rows)
	require.Equal(t, map[string]string{"chart": "y"}, d.Sections)
	require.Equal(t, map[string]string{"b": "2"}, diffFields(map[string]string{"a": "1", "b": "1"}, map[string]string{"a": "1", "b": "2"}))
}
