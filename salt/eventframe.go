package salt

import (
	"bufio"
	"encoding/binary"
	"io"
	"slices"

	"github.com/cockroachdb/errors"
)

// frameFormat is the event bus framing of one connection.
type frameFormat int

// Framings. Salt 3006.0 writes bare msgpack maps back to back; 3006.26+
// (at least) put a 4-byte big-endian length before each map.
const (
	framingUnknown frameFormat = iota
	framingBare
	framingLengthPrefixed
)

func (f frameFormat) String() string {
	switch f {
	case framingBare:
		return "bare"
	case framingLengthPrefixed:
		return "length-prefixed"
	}
	return "unknown"
}

// detectFraming looks at the first byte of a frame: a msgpack map header
// (0x80-0x8f, 0xde, 0xdf) means bare maps; anything else is a length prefix
// (a prefix starting with a map byte would announce a frame of >= 2 GiB).
func detectFraming(first byte) frameFormat {
	if first&0xf0 == 0x80 || first == 0xde || first == 0xdf {
		return framingBare
	}
	return framingLengthPrefixed
}

// frameReader reads event frames of one connection.
type frameReader struct {
	br      *bufio.Reader
	max     int
	framing frameFormat
	spare   []byte // a frame buffer given back by recycle, for the next large frame
}

// recycle gives back an owned frame that nothing references any more (its event
// was filtered out, undecodable or dropped): the next large frame is read into
// it instead of a new allocation, so that a stream of hostile frames at the cap
// does not pile up garbage between collections.
func (r *frameReader) recycle(frame []byte) {
	if cap(frame) > cap(r.spare) {
		r.spare = frame[:0]
	}
}

// buffer returns a slice of n bytes, the spare one when it is large enough.
func (r *frameReader) buffer(n int) []byte {
	if cap(r.spare) >= n {
		b := r.spare[:n]
		r.spare = nil
		return b
	}
	return make([]byte, n)
}

// next returns the next frame (the msgpack {head, body} bytes). io.EOF means
// the stream ended cleanly between frames. The frame is the caller's.
func (r *frameReader) next() ([]byte, error) {
	frame, shared, err := r.nextShared()
	if shared {
		frame = slices.Clone(frame)
	}
	return frame, err
}

// nextShared is next, except that when shared is true the frame is a slice
// of the read buffer, valid only until the next read from it. A frame that
// is wholly buffered (the common case: the buffer is 64 KiB, Salt events are
// trimmed to 1 MiB and mostly far smaller) is neither copied nor scanned
// byte by byte; anything else (a frame larger than the buffer, an error, a
// short read at the end of the stream) takes the copying reader, which
// decides the result exactly as before.
func (r *frameReader) nextShared() (frame []byte, shared bool, err error) {
	if r.framing == framingUnknown {
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, false, err
		}
		r.framing = detectFraming(b[0])
	}
	if r.framing == framingLengthPrefixed {
		if b, err := r.br.Peek(4); err == nil {
			n := binary.BigEndian.Uint32(b)
			if n != 0 && uint64(n) <= uint64(r.max) && uint64(n)+4 <= uint64(r.br.Size()) {
				if b, err := r.br.Peek(4 + int(n)); err == nil {
					_, _ = r.br.Discard(4 + int(n))
					return b[4:], true, nil
				}
			}
		}
	} else if n, ok := r.bufferedObject(); ok {
		b, _ := r.br.Peek(n)
		_, _ = r.br.Discard(n)
		return b, true, nil
	}
	frame, err = r.nextCopy()
	return frame, false, err
}

// bufferedObject reports the length of the msgpack object at the start of
// the read buffer, reading more into the buffer as needed, when the whole
// object fits the buffer and max; ok=false otherwise (including on any read
// error: the copying reader then reads the same bytes and reports it). The
// scan is resumable (off, pending), so a frame arriving in pieces is
// scanned once.
func (r *frameReader) bufferedObject() (int, bool) {
	limit := min(r.max, r.br.Size())
	off, pending := 0, 1
	for {
		if r.br.Buffered() <= off {
			if _, err := r.br.Peek(off + 1); err != nil {
				return 0, false
			}
		}
		b, _ := r.br.Peek(r.br.Buffered())
		if len(b) > limit {
			b = b[:limit]
		}
		var done bool
		off, pending, done = scanMsgpack(b, limit, off, pending)
		if done {
			return off, pending == 0
		}
		// the item at off is not wholly buffered
		if len(b) >= limit {
			return 0, false
		}
		if _, err := r.br.Peek(len(b) + 1); err != nil {
			return 0, false
		}
	}
}

// scanMsgpack advances over whole msgpack items of b from off while pending
// items remain. It stops at the first item that is not wholly in b
// (done=false: read more and call again with the returned off, pending), or
// with done=true when pending reaches 0, or when the data is invalid or
// cannot fit in limit bytes (then pending > 0), as soon as a header says so,
// without waiting for more bytes.
func scanMsgpack(b []byte, limit, off, pending int) (int, int, bool) {
	for pending > 0 {
		if off >= len(b) {
			return off, pending, false
		}
		c := b[off]
		hdr := 1
		h, ok := msgpackHead(c)
		if !ok {
			return off, pending, true // reserved byte: invalid
		}
		if h.lenBytes > 0 {
			if len(b)-off-1 < h.lenBytes {
				return off, pending, false
			}
			var n uint64
			for _, x := range b[off+1 : off+1+h.lenBytes] {
				n = n<<8 | uint64(x)
			}
			hdr += h.lenBytes
			h.setLength(n)
		}
		payload, children := h.payload, h.children
		room := uint64(limit - off - hdr) // limit >= len(b) > off
		if payload > room {
			return off, pending, true
		}
		// every pending item needs at least one more byte
		if children > room || uint64(pending-1)+children > room-payload {
			return off, pending, true
		}
		if payload > uint64(len(b)-off-hdr) {
			return off, pending, false
		}
		off += hdr + int(payload)
		pending += int(children) - 1
	}
	return off, 0, true
}

// nextCopy reads the next frame into a new slice.
func (r *frameReader) nextCopy() ([]byte, error) {
	if r.framing == framingUnknown {
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, err
		}
		r.framing = detectFraming(b[0])
	}
	if r.framing == framingLengthPrefixed {
		var hdr [4]byte
		if _, err := io.ReadFull(r.br, hdr[:]); err != nil {
			return nil, err
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 || uint64(n) > uint64(r.max) {
			return nil, errors.Wrapf(errFrameTooLarge, "length prefix %d (limit %d)", errors.Safe(n), errors.Safe(r.max))
		}
		buf := r.buffer(int(n))
		if _, err := io.ReadFull(r.br, buf); err != nil {
			return nil, noEOF(err)
		}
		return buf, nil
	}
	buf := r.spare[:0]
	r.spare = nil
	return readMsgpackObject(r.br, r.max, buf)
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readMsgpackObject copies exactly one msgpack object from br, without
// decoding it, refusing objects larger than max bytes before reading them.
// It is iterative (no recursion): pending counts the objects still to read.
// buf (length 0) is where the object goes; nil allocates.
func readMsgpackObject(br *bufio.Reader, max int, buf []byte) ([]byte, error) {
	if buf == nil {
		buf = make([]byte, 0, 512)
	}
	pending := 1
	readN := func(n uint64) error {
		if n > uint64(max-len(buf)) {
			return errors.Wrapf(errFrameTooLarge, "frame exceeds %d bytes", errors.Safe(max))
		}
		start := len(buf)
		buf = slices.Grow(buf, int(n))[:start+int(n)]
		_, err := io.ReadFull(br, buf[start:])
		return noEOF(err)
	}
	for pending > 0 {
		pending--
		c, err := br.ReadByte()
		if err != nil {
			if len(buf) > 0 {
				return nil, noEOF(err)
			}
			return nil, err
		}
		if len(buf) >= max {
			return nil, errors.Wrapf(errFrameTooLarge, "frame exceeds %d bytes", errors.Safe(max))
		}
		buf = append(buf, c)
		h, ok := msgpackHead(c)
		if !ok {
			return nil, errors.Wrapf(errMsgpack, "reserved type byte 0x%02x in event stream", errors.Safe(c))
		}
		if h.lenBytes > 0 {
			start := len(buf)
			if err := readN(uint64(h.lenBytes)); err != nil {
				return nil, err
			}
			var n uint64
			for _, b := range buf[start:] {
				n = n<<8 | uint64(b)
			}
			h.setLength(n)
		}
		payload, children := h.payload, h.children
		if payload > 0 {
			if err := readN(payload); err != nil {
				return nil, err
			}
		}
		// every pending object needs at least one more byte
		if children > uint64(max-len(buf)) || uint64(pending)+children > uint64(max-len(buf)) {
			return nil, errors.Wrapf(errFrameTooLarge, "frame exceeds %d bytes", errors.Safe(max))
		}
		pending += int(children)
	}
	return buf, nil
}

// msgpackHeader is what a msgpack type byte says about the item it starts: a
// payload of fixed size, a number of child items (fixarray, fixmap), or the
// size of a big-endian length field that follows and what that length counts.
type msgpackHeader struct {
	lenBytes int    // size of a length field that follows (0: none)
	kind     int    // what the length counts: 1 str/bin bytes, 2 array items, 3 map pairs, 4 ext bytes
	payload  uint64 // bytes of payload after the header
	children uint64 // child items that follow
}

// msgpackHead classifies a type byte; ok is false for the reserved byte 0xc1.
// Both frame readers (in place and copying) use it, so they agree by construction.
func msgpackHead(c byte) (h msgpackHeader, ok bool) {
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
	case c >= 0xa0 && c <= 0xbf:
		h.payload = uint64(c & 0x1f)
	case c >= 0x90 && c <= 0x9f:
		h.children = uint64(c & 0x0f)
	case c >= 0x80 && c <= 0x8f:
		h.children = 2 * uint64(c&0x0f)
	default:
		switch c {
		case 0xc4, 0xd9:
			h.kind, h.lenBytes = 1, 1
		case 0xc5, 0xda:
			h.kind, h.lenBytes = 1, 2
		case 0xc6, 0xdb:
			h.kind, h.lenBytes = 1, 4
		case 0xca, 0xce, 0xd2:
			h.payload = 4
		case 0xcb, 0xcf, 0xd3:
			h.payload = 8
		case 0xcc, 0xd0:
			h.payload = 1
		case 0xcd, 0xd1:
			h.payload = 2
		case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
			h.payload = 1 + (1 << (c - 0xd4))
		case 0xc7:
			h.kind, h.lenBytes = 4, 1
		case 0xc8:
			h.kind, h.lenBytes = 4, 2
		case 0xc9:
			h.kind, h.lenBytes = 4, 4
		case 0xdc:
			h.kind, h.lenBytes = 2, 2
		case 0xdd:
			h.kind, h.lenBytes = 2, 4
		case 0xde:
			h.kind, h.lenBytes = 3, 2
		case 0xdf:
			h.kind, h.lenBytes = 3, 4
		default:
			return h, false
		}
	}
	return h, true
}

// setLength applies the value of the length field.
func (h *msgpackHeader) setLength(n uint64) {
	switch h.kind {
	case 1:
		h.payload = n
	case 4:
		h.payload = n + 1 // type byte
	case 2:
		h.children = n
	case 3:
		h.children = 2 * n
	}
}
