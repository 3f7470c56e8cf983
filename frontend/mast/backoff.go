package mast

import (
	"math"
	"time"
)

// Backoff is the wait before reconnect attempt n (from 0), the seed's
// formula: min(1 s · 2^n, 30 s), plus jitter of 0–30 % of that; jitter
// is a number in [0, 1).
func Backoff(attempt int, jitter float64) time.Duration {
	const base, limit = time.Second, 30 * time.Second
	d := limit
	if attempt < 5 { // 2^5 s is past the cap already
		d = min(base*time.Duration(math.Pow(2, float64(max(attempt, 0)))), limit)
	}
	jitter = min(max(jitter, 0), 1)
	return d + time.Duration(float64(d)*0.3*jitter)
}
