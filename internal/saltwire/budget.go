package saltwire

// Limits bound what decoding one untrusted msgpack document may allocate. Wire bytes are a poor
// bound: an empty array is one byte on the wire and about 40 bytes decoded ([]any header plus its
// interface slot), so every value is charged an estimate of the Go memory it costs before it is
// allocated (see the cost constants below), and decoding stops with ErrBudget as soon as the
// estimate would exceed MaxBytes.
type Limits struct {
	MaxElements int64 // decoded values, map keys included
	MaxBytes    int64 // estimated bytes allocated (values, slots, string and bin lengths)
	MaxDepth    int   // nesting of arrays, maps and ext 79 payloads
}

// Valid reports whether every limit is positive.
func (l Limits) Valid() bool { return l.MaxElements > 0 && l.MaxBytes > 0 && l.MaxDepth > 0 }

// Estimated Go memory of decoded values, measured on amd64 (Go 1.26): an interface slot or a
// string header is 16 bytes, a boxed []any header 24, a boxed number 8; a map header is 48, its
// first entry brings a group of 8 slots (about 320 bytes), later entries cost about 100 bytes
// each with growth. A map is charged per distinct key it actually holds (duplicate keys do not
// grow it), every value per occurrence (a replaced value was still allocated).
const (
	CostSlot       = 16
	costArray      = 24
	costNumber     = 8
	costString     = 16
	costMap        = 48
	costFirstEntry = 336
	costEntry      = 112
	costExt        = 48
)

// maxMapHint caps the capacity preallocated for a decoded map (Salt return events have about ten
// keys). The budget charges the hinted entries up front (mapCharge), since they are allocated
// whether or not their keys come (duplicates), and every distinct key beyond them as it arrives.
const maxMapHint = 32

// Budget is what one document may still spend. Exceeded records why decoding stopped, so that a
// decoder reporting a bare failure (the event fast path) can tell a budget refusal from invalid
// data.
type Budget struct {
	elems    int64
	bytes    int64
	maxDepth int
	Exceeded bool
}

// NewBudget returns a fresh budget of l.
func NewBudget(l Limits) *Budget {
	return &Budget{elems: l.MaxElements, bytes: l.MaxBytes, maxDepth: l.MaxDepth}
}

// Reset makes b a fresh budget of l (a reader reuses one budget for all its frames).
func (b *Budget) Reset(l Limits) {
	*b = Budget{elems: l.MaxElements, bytes: l.MaxBytes, maxDepth: l.MaxDepth}
}

// Charge takes elems values and bytes estimated bytes, or reports false (and remembers it).
func (b *Budget) Charge(elems, bytes int64) bool {
	if b.Exceeded || elems > b.elems || bytes > b.bytes {
		b.Exceeded = true
		return false
	}
	b.elems -= elems
	b.bytes -= bytes
	return true
}

// depthOK reports whether depth is allowed (and remembers a refusal).
func (b *Budget) depthOK(depth int) bool {
	if depth > b.maxDepth {
		b.Exceeded = true
		return false
	}
	return true
}

// Spent is the estimate of what was charged so far against l.
func (b *Budget) Spent(l Limits) int64 { return l.MaxBytes - b.bytes }

// mapCharge is the up-front charge of a map of n declared pairs: its header and the entries its
// size hint allocates (the first brings a group of 8).
func mapCharge(n int) int64 {
	h := int64(min(n, maxMapHint))
	if h == 0 {
		return costMap
	}
	return costMap + costFirstEntry + (h-1)*costEntry
}
