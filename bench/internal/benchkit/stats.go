package benchkit

import (
	"math"
	"slices"
	"time"
)

// Summary is the distribution of one round's samples, in the unit its JSON key names (bench_report.py
// reads median, p90, p99, min and max).
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize gives the median and the nearest-rank percentiles of d, in units of unit, rounded to
// three decimals. No samples: the zero Summary.
func Summarize(d []time.Duration, unit time.Duration) Summary {
	if len(d) == 0 {
		return Summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	f := func(x time.Duration) float64 { return Round3(float64(x) / float64(unit)) }
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(n))) - 1
		return s[max(0, min(n-1, i))]
	}
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{N: n, Median: f(med), P90: f(rank(0.9)), P99: f(rank(0.99)), Min: f(s[0]), Max: f(s[n-1])}
}

// Round3 rounds x to three decimals, the precision every figure is reported in.
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }
