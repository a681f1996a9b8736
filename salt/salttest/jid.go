package salttest

import (
	"fmt"
	"sort"
	"time"
)

// jidGen makes Salt JIDs (UTC %Y%m%d%H%M%S%f, 20 digits), strictly increasing. The caller holds
// Master.mu.
type jidGen struct{ last time.Time }

func (g *jidGen) next() string {
	now := time.Now().UTC().Truncate(time.Microsecond)
	if !now.After(g.last) {
		now = g.last.Add(time.Microsecond)
	}
	g.last = now
	return now.Format("20060102150405") + fmt.Sprintf("%06d", now.Nanosecond()/1000)
}

func (s *Master) newJID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jids.next()
}

// appendStamp appends stamp(t) to b without allocating.
func appendStamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	b = t.AppendFormat(b, "2006-01-02T15:04:05")
	if us := t.Nanosecond() / 1000; us != 0 {
		b = append(b, '.')
		for d := 100000; d > 0; d /= 10 {
			b = append(b, byte('0'+us/d%10))
		}
	}
	return b
}

// stamp formats t like Python's datetime.utcnow().isoformat(): microseconds omitted when zero.
func stamp(t time.Time) string { return string(appendStamp(make([]byte, 0, 26), t)) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// floatTime is a time as Python's time.time() float.
func floatTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
