package resultset

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func s(v string) *string { return &v }

func TestOffCapturesNothing(t *testing.T) {
	var c *Capture = New(0)
	require.Nil(t, c)
	require.False(t, c.Wants())
	c.Begin([]string{"a"})
	require.False(t, c.WantsRow())
	c.Row([]*string{s("x")})
	require.Nil(t, c.Output())
}

func TestLimitsAndTheirNote(t *testing.T) {
	c := New(3)
	c.Begin(nil) // a statement without rows is no result set
	c.Begin([]string{"a", "b"})
	for _, v := range []string{"1", "2"} {
		require.True(t, c.WantsRow())
		c.Row([]*string{s(v), nil})
	}
	c.Begin([]string{"c"})
	require.True(t, c.WantsRow())
	c.Row([]*string{s("3")})
	require.False(t, c.WantsRow(), "the fourth row is past result_rows")
	c.Begin([]string{"d"})
	o := c.Output()
	require.Len(t, o.Sets, 2)
	require.Nil(t, o.Sets[0].Rows[0][1])
	require.Contains(t, o.Truncated, "result_rows")
	require.Contains(t, o.Truncated, "more result sets")

	back, err := Decode(o.Encode())
	require.NoError(t, err)
	require.Equal(t, *o, back, "the stored form reads back the same, NULL included")

	exact := New(1)
	exact.Begin([]string{"a"})
	require.True(t, exact.WantsRow())
	exact.Row([]*string{s("only")})
	require.Empty(t, exact.Output().Truncated, "nothing was left out")
}

func TestBytesAreCutOnACharacter(t *testing.T) {
	c := New(10)
	c.Begin([]string{"v"})
	require.True(t, c.WantsRow())
	c.Row([]*string{s(strings.Repeat("é", MaxBytes))})
	require.False(t, c.WantsRow(), "nothing more after the byte limit")
	v := *c.Output().Sets[0].Rows[0][0]
	require.True(t, strings.HasSuffix(v, CutMark))
	require.LessOrEqual(t, len(v), MaxBytes)
	require.True(t, strings.HasPrefix(v, "éé"))
	require.NotContains(t, strings.TrimSuffix(v, CutMark), "\uFFFD")
	require.Contains(t, c.Output().Truncated, "64 KiB")
}

func TestText(t *testing.T) {
	require.Nil(t, Text(nil, Plain))
	require.Equal(t, "NULL", *Text("NULL", Plain))
	require.Equal(t, "0x01ff", *Text([]byte{1, 255}, Binary))
	require.Equal(t, "12.50", *Text([]byte("12.50"), Plain), "a decimal's bytes are its text")
	require.Equal(t, "1", *Text(true, Plain))
	at := time.Date(2026, 11, 27, 8, 30, 0, 500_000_000, time.FixedZone("", 3600))
	require.Equal(t, "2026-11-27 08:30:00.5 +01:00", *Text(at, Zoned))
	require.Equal(t, "2026-11-27 08:30:00.5", *Text(at, Plain))
	require.Equal(t, "2026-11-27", *Text(at, Date))
	big := Hex(make([]byte, hexCap+1))
	require.True(t, strings.HasSuffix(big, CutMark))
}
