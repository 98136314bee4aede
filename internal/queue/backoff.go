package queue

import (
	"math/rand/v2"
	"time"
)

// Backoff returns how long to wait before retry number n (1 for the first retry):
// 2^n seconds capped at one hour, with ±25 % jitter so that tasks failing together
// do not come back together.
func Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 12 {
		n = 12
	}
	base := time.Duration(1<<n) * time.Second
	if base > time.Hour {
		base = time.Hour
	}
	jitter := time.Duration((rand.Float64()*0.5 - 0.25) * float64(base))
	return base + jitter
}
