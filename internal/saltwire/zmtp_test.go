package saltwire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func frameReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// TestFrameRoundTrip: short and long frames, and a message's MORE flags, read back as written.
func TestFrameRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 70000} {
		body := bytes.Repeat([]byte{'x'}, n)
		msg := AppendMessage(nil, nil, body)
		r := frameReader(msg)
		fl, b, err := ReadFrame(r, 1<<20)
		if err != nil || fl != FlagMore || len(b) != 0 {
			t.Fatalf("n=%d delimiter: %x %q %v", n, fl, b, err)
		}
		fl, b, err = ReadFrame(r, 1<<20)
		if err != nil || fl&FlagMore != 0 || !bytes.Equal(b, body) || (n > 255) != (fl&FlagLong != 0) {
			t.Fatalf("n=%d body: flags %x, %d bytes, %v", n, fl, len(b), err)
		}
	}
}

// TestReadFrameRefusesBeforeAllocating: a frame announcing more than the limit, or a command
// beyond MaxCommandBytes, is refused from its header alone (the body is never sent here).
func TestReadFrameRefusesBeforeAllocating(t *testing.T) {
	huge := []byte{FlagLong, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	_, _, err := ReadFrame(frameReader(huge), 1<<20)
	var big *FrameTooLargeError
	if !errors.As(err, &big) || !errors.Is(err, ErrFrameTooLarge) || big.Limit != 1<<20 {
		t.Fatalf("huge frame: %v", err)
	}
	cmd := []byte{FlagCommand | FlagLong, 0, 0, 0, 0, 0, 1, 0, 1}
	if _, _, err := ReadFrame(frameReader(cmd), 1<<30); !errors.Is(err, ErrProtocol) {
		t.Fatalf("command of 64 KiB + 1: %v", err)
	}
	if _, _, err := ReadFrame(frameReader([]byte{0x08, 0}), 10); !errors.Is(err, ErrProtocol) {
		t.Fatalf("reserved flag: %v", err)
	}
	if _, _, err := ReadFrame(frameReader([]byte{0, 5, 'a'}), 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated body: %v", err)
	}
}

func TestGreetingAndReady(t *testing.T) {
	if err := CheckGreeting(Greeting()); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(g []byte){
		"signature": func(g []byte) { g[0] = 0 },
		"version 2": func(g []byte) { g[10] = 2 },
		"CURVE":     func(g []byte) { copy(g[12:], "CURVE") },
	} {
		g := Greeting()
		edit(g)
		if err := CheckGreeting(g); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: %v", name, err)
		}
	}
	r := frameReader(Ready("REQ"))
	fl, body, err := ReadFrame(r, MaxCommandBytes)
	if err != nil {
		t.Fatal(err)
	}
	props, err := ParseReady(fl, body)
	if err != nil || props["socket-type"] != "REQ" || len(props) != 2 {
		t.Fatalf("READY: %v %v", props, err)
	}
	if _, err := ParseReady(FlagCommand, Command("ERROR", []byte("\x03bad"))[2:]); err == nil ||
		!strings.Contains(err.Error(), "ERROR") {
		t.Fatalf("ERROR at handshake: %v", err)
	}
	if _, err := ParseProperties([]byte{5, 'a'}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("truncated property: %v", err)
	}
	if _, err := ParseProperties(append([]byte{1, 'k'}, 0, 0, 0, 9)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("truncated property value: %v", err)
	}
	if _, err := PingContext([]byte{0}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("short PING: %v", err)
	}
}

// FuzzReadFrame: any byte stream reads as frames or fails with an error; no panic, and no
// frame beyond its limit.
func FuzzReadFrame(f *testing.F) {
	f.Add(AppendMessage(nil, nil, []byte("body")))
	f.Add(Ready("ROUTER"))
	f.Add([]byte{FlagLong, 0, 0, 0, 0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := frameReader(b)
		for range 64 {
			fl, body, err := ReadFrame(r, 4096)
			if err != nil {
				return
			}
			if len(body) > 4096 {
				t.Fatalf("frame of %d bytes beyond the limit", len(body))
			}
			if fl&FlagCommand != 0 {
				if name, data, err := ParseCommand(body); err == nil && name == "READY" {
					_, _ = ParseProperties(data)
				}
			}
		}
	})
}
