package saltwire

// ZMTP 3.1 over the NULL mechanism, the framing of Salt's request port (ret_port): what both
// ends write and read. What each end decides (the client's one-request connection, its reply
// cap and PONG; the simulator's ROUTER, its PINGs and its faults) stays with that end.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/cockroachdb/errors"
)

// Frame flags.
const (
	FlagMore    = 0x01
	FlagLong    = 0x02
	FlagCommand = 0x04
)

// MaxCommandBytes caps READY/PING/ERROR command frames.
const MaxCommandBytes = 64 << 10

// GreetingSize is the length of a ZMTP 3 greeting.
const GreetingSize = 64

// Greeting is a ZMTP 3.1 NULL greeting (as-server 0) as libzmq 4.3 sends it, with 0x01 in the
// last padding byte of the signature.
func Greeting() []byte {
	g := make([]byte, GreetingSize)
	g[0] = 0xff
	g[8] = 0x01 // as libzmq sends it (padding; peers ignore it)
	g[9] = 0x7f
	g[10], g[11] = 3, 1
	copy(g[12:32], "NULL")
	return g
}

// CheckGreeting accepts a peer's greeting that offers ZMTP 3.x with the NULL mechanism.
func CheckGreeting(g []byte) error {
	if len(g) != GreetingSize || g[0] != 0xff || g[9] != 0x7f {
		return errors.Wrap(ErrProtocol, "peer is not a ZMTP endpoint")
	}
	if g[10] < 3 {
		return errors.Wrapf(ErrProtocol, "peer speaks ZMTP %d.%d, need 3.x", errors.Safe(g[10]), errors.Safe(g[11]))
	}
	if mech := string(bytes.TrimRight(g[12:32], "\x00")); mech != "NULL" {
		return errors.Wrapf(ErrProtocol, "peer security mechanism %q, want NULL", errors.Safe(mech))
	}
	return nil
}

// AppendFrame appends one frame with the given flags (MORE, COMMAND; LONG is set by length).
func AppendFrame(dst []byte, flags byte, body []byte) []byte {
	if len(body) > 255 {
		dst = append(dst, flags|FlagLong)
		dst = binary.BigEndian.AppendUint64(dst, uint64(len(body)))
	} else {
		dst = append(dst, flags, byte(len(body)))
	}
	return append(dst, body...)
}

// AppendMessage appends a multipart message: every frame but the last has MORE.
func AppendMessage(dst []byte, frames ...[]byte) []byte {
	for i, f := range frames {
		var fl byte
		if i < len(frames)-1 {
			fl = FlagMore
		}
		dst = AppendFrame(dst, fl, f)
	}
	return dst
}

// Command is the frame of command name with data.
func Command(name string, data []byte) []byte {
	body := make([]byte, 0, 1+len(name)+len(data))
	body = append(body, byte(len(name)))
	body = append(body, name...)
	body = append(body, data...)
	return AppendFrame(make([]byte, 0, 9+len(body)), FlagCommand, body)
}

// Ready is the READY command frame of a socket of socketType with an empty Identity.
func Ready(socketType string) []byte {
	var p []byte
	p = AppendProperty(p, "Socket-Type", socketType)
	p = AppendProperty(p, "Identity", "")
	return Command("READY", p)
}

// AppendProperty appends one READY property (name length, name, 4-byte value length, value).
func AppendProperty(dst []byte, name, value string) []byte {
	dst = append(dst, byte(len(name)))
	dst = append(dst, name...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(value)))
	return append(dst, value...)
}

// ParseCommand splits a command frame's body into its name and data.
func ParseCommand(body []byte) (string, []byte, error) {
	if len(body) < 1 || int(body[0]) > len(body)-1 {
		return "", nil, errors.Wrap(ErrProtocol, "malformed command frame")
	}
	n := int(body[0])
	return string(body[1 : 1+n]), body[1+n:], nil
}

// ParseProperties decodes READY's properties. Property names are case-insensitive in ZMTP: the
// keys are lower-cased.
func ParseProperties(p []byte) (map[string]string, error) {
	out := map[string]string{}
	for len(p) > 0 {
		kl := int(p[0])
		if len(p) < 1+kl+4 {
			return nil, errors.Wrap(ErrProtocol, "malformed READY property")
		}
		k := strings.ToLower(string(p[1 : 1+kl]))
		vl := binary.BigEndian.Uint32(p[1+kl : 5+kl])
		p = p[5+kl:]
		if uint64(vl) > uint64(len(p)) {
			return nil, errors.Wrap(ErrProtocol, "malformed READY property value")
		}
		out[k] = string(p[:vl])
		p = p[vl:]
	}
	return out, nil
}

// ParseReady checks that a frame is a READY command and returns its properties; a peer's ERROR
// command is refused as such.
func ParseReady(flags byte, body []byte) (map[string]string, error) {
	if flags&FlagCommand == 0 {
		return nil, errors.Wrap(ErrProtocol, "expected READY command")
	}
	name, data, err := ParseCommand(body)
	if err != nil {
		return nil, err
	}
	if name == "ERROR" {
		return nil, errors.Wrap(ErrProtocol, "peer sent ERROR during handshake")
	}
	if name != "READY" {
		return nil, errors.Wrapf(ErrProtocol, "expected READY, got %q", errors.Safe(name))
	}
	return ParseProperties(data)
}

// PingContext returns the context a PONG must echo: a PING is a 2-byte TTL and up to 16 bytes of
// context.
func PingContext(data []byte) ([]byte, error) {
	if len(data) < 2 || len(data) > 18 {
		return nil, errors.Wrap(ErrProtocol, "malformed PING")
	}
	return data[2:], nil
}

// FrameTooLargeError is ReadFrame's refusal of a frame announcing more than the reader's limit.
// It is ErrFrameTooLarge.
type FrameTooLargeError struct{ Size, Limit uint64 }

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("salt: ZMTP frame of %d bytes exceeds limit %d", e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrFrameTooLarge) hold.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// ReadFrame reads one frame from r, refusing a body larger than limit (*FrameTooLargeError) or a
// command frame larger than MaxCommandBytes before allocating it. On ErrFrameTooLarge the flags
// are returned (the frame's body is left unread).
func ReadFrame(r *bufio.Reader, limit uint64) (byte, []byte, error) {
	var hdr [2]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	flags := hdr[0]
	if flags&^(FlagMore|FlagLong|FlagCommand) != 0 {
		return 0, nil, errors.Wrapf(ErrProtocol, "reserved frame flags 0x%02x", errors.Safe(flags))
	}
	size := uint64(hdr[1])
	if flags&FlagLong != 0 {
		var long [8]byte
		long[0] = hdr[1]
		if _, err := io.ReadFull(r, long[1:]); err != nil {
			return 0, nil, err
		}
		size = binary.BigEndian.Uint64(long[:])
	}
	if flags&FlagCommand != 0 && size > MaxCommandBytes {
		return 0, nil, errors.Wrap(ErrProtocol, "command frame too large")
	}
	if size > limit {
		return flags, nil, &FrameTooLargeError{Size: size, Limit: limit}
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return flags, body, nil
}
