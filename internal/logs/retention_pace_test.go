package logs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetentionPacesBatchesWhereWritersRunSideBySide(t *testing.T) {
	p := newPacer(0, 0, false)
	require.Equal(t, defaultBatch, p.batch)
	for _, took := range []time.Duration{time.Millisecond, 40 * time.Millisecond, time.Second} {
		require.Equal(t, defaultPause, p.next(took), "a fixed pause, whatever a batch took")
		require.Equal(t, defaultBatch, p.batch, "a fixed batch")
	}
}

func TestRetentionGivesOneWriterBackForMostOfTheTime(t *testing.T) {
	p := newPacer(0, 0, true)
	require.Equal(t, oneWriterBatch, p.batch, "small batches: each holds the one writer briefly")
	for _, took := range []time.Duration{300 * time.Microsecond, 3 * time.Millisecond, time.Second} {
		pause := p.next(took)
		require.Equal(t, took*(oneWriterShare-1), pause, "a pause in proportion to the batch")
		require.InDelta(t, 1.0/oneWriterShare, float64(took)/float64(took+pause), 1e-9, "the purge's share of the writer")
	}
}

func TestRetentionPauseIsAtLeastTheOneSet(t *testing.T) {
	p := newPacer(30, time.Second, true)
	require.Equal(t, 30, p.batch, "Batch is the batch on one writer too")
	require.Equal(t, time.Second, p.next(time.Millisecond))
}
