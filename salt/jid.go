package salt

import (
	"sync"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// JID is a Salt job id: exactly 20 ASCII digits, the UTC time of its creation
// formatted as %Y%m%d%H%M%S%f (microseconds).
type JID string

// String returns the JID text.
func (j JID) String() string { return string(j) }

// ParseJID validates s: exactly 20 ASCII digits. Salt's own "unique_jid" form
// (<20 digits>_<pid>) is refused: this library always uses plain JIDs.
func ParseJID(s string) (_ JID, err error) {
	defer errmark.Boundary(&err)
	if len(s) != 20 {
		return "", errors.Wrapf(ErrInvalidJID, "length %d, want 20", errors.Safe(len(s)))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", errors.Wrapf(ErrInvalidJID, "non-digit at offset %d", errors.Safe(i))
		}
	}
	return JID(s), nil
}

// jidLayout is %Y%m%d%H%M%S%f.
const jidLayout = "20060102150405.000000"

// JIDGenerator makes JIDs in Salt's format that are strictly increasing, and
// therefore unique, for every caller of this generator, also under
// concurrency: when the clock has not advanced (or went back) since the last
// JID, the microseconds are bumped past the last one. Use one generator per
// process; two generators may produce the same JID. The zero value is not
// usable: call NewJIDGenerator.
type JIDGenerator struct {
	mu   sync.Mutex
	now  func() time.Time
	last time.Time
}

// NewJIDGenerator returns a generator using the current UTC time.
func NewJIDGenerator() *JIDGenerator {
	return &JIDGenerator{now: time.Now}
}

// Next returns a new JID, strictly greater than every JID this generator
// returned before.
func (g *JIDGenerator) Next() JID {
	if g == nil || g.now == nil {
		panic("salt: JIDGenerator used without NewJIDGenerator")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.now().UTC().Truncate(time.Microsecond)
	if !t.After(g.last) {
		t = g.last.Add(time.Microsecond)
	}
	g.last = t
	b := make([]byte, 0, 21)
	b = t.AppendFormat(b, jidLayout)
	// drop the '.' between seconds and microseconds
	copy(b[14:], b[15:])
	return JID(b[:20])
}

// Time returns the UTC time encoded in the JID.
func (j JID) Time() (_ time.Time, err error) {
	defer errmark.Boundary(&err)
	if _, err := ParseJID(string(j)); err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(jidLayout, string(j[:14])+"."+string(j[14:]))
	if err != nil {
		return time.Time{}, errors.Wrap(ErrInvalidJID, "not a date")
	}
	return t, nil
}
