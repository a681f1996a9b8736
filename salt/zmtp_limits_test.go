package salt

import (
	"bytes"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

// A peer that streams empty MORE frames costs no reply bytes; the client must stop at maxReplyFrames
// instead of collecting frames until the request timeout.
func TestReplyFrameCountIsBounded(t *testing.T) {
	t.Parallel()
	_, addr := startRawRouter(t, func(c *rawConn, req []byte) {
		frame := []byte{zmtpFlagMore, 0}
		burst := bytes.Repeat(frame, 4096)
		for i := 0; i < 256; i++ { // about 2 MiB of empty frames, then a proper end
			if _, err := c.nc.Write(burst); err != nil {
				return
			}
		}
		_, _ = c.nc.Write(zmtpFrame(0, okReply(t, "20261129154606042846")))
	})
	start := time.Now()
	_, err := publishOnce(t, addr, WithRequestTimeout(5*time.Second))
	if !errors.Is(err, errProtocol) || !IsOutcomeUnknown(err) {
		t.Fatalf("endless frames: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %s: the frame cap did not stop the read", d)
	}

	// Extra frames within the cap are tolerated; the first body frame is the reply.
	_, addr = startRawRouter(t, func(c *rawConn, req []byte) {
		msg := []byte{zmtpFlagMore, 0}
		msg = append(msg, zmtpFrame(zmtpFlagMore, okReply(t, "20261129154606042846"))...)
		for i := 0; i < maxReplyFrames-3; i++ {
			msg = append(msg, zmtpFlagMore, 0)
		}
		msg = append(msg, 0, 0)
		_, _ = c.nc.Write(msg)
	})
	res, err := publishOnce(t, addr)
	if err != nil || res.JID != "20261129154606042846" {
		t.Fatalf("%d frames: %+v %v", maxReplyFrames, res, err)
	}
}
