package salt

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/testwait"
)

// A caller waiting for another caller's slow mk_token gives up when its own context ends, instead of
// blocking until the login finishes; the login itself is still shared by everyone who waits for it.
func TestTokenSourceWaitRespectsContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var logins atomic.Int64
	_, addr := startRawRouter(t, func(c *rawConn, req []byte) {
		logins.Add(1)
		<-release
		b, _ := encodeSalt(map[string]any{"token": "tok", "name": "u", "eauth": "file",
			"start": float64(time.Now().Unix()), "expire": float64(time.Now().Add(time.Hour).Unix())})
		_ = c.reply(b)
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)                                         // runs before the router's cleanup, which waits for the handlers
	c, _ := NewClient(addr, WithRequestTimeout(3*time.Second)) // bounds the test if the wait regresses
	src := NewTokenSource(c, "file", "u", "pw")

	var wg sync.WaitGroup
	results := make(chan error, 3)
	for i := 0; i < 3; i++ { // one of them logs in, two wait for it
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := src.Token(context.Background())
			if err == nil && tok != "tok" {
				err = errors.Newf("token %q", tok)
			}
			results <- err
		}()
	}
	testwait.Until(t, "no caller logged in", 5*time.Second, func() bool { return logins.Load() > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := src.Token(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting caller: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("waiting caller returned after %s, its context ended after 50ms", d)
	}
	unblock()
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := logins.Load(); n != 1 {
		t.Fatalf("%d mk_token calls, want 1 shared login", n)
	}
}
