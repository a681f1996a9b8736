package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/oduflow/oduflow-go/oduflow"
	"github.com/oduflow/oduflow-go/receipt"
)

// waitFor polls status until it reports a terminal status (or unknown), ctx ends or timeout
// passes (0: no limit). Progress goes to stderr: a live line (elapsed, status, polls) on a
// terminal, a plain line per status change otherwise.
func (e *env) waitFor(ctx context.Context, first oduflow.Response, interval, timeout time.Duration,
	status func(context.Context) (oduflow.Response, error)) (oduflow.Response, error) {
	live := isTerminal(e.stderr)
	start := time.Now()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	r, polls := first, 0
	last := r.Status
	if !live {
		fmt.Fprintf(e.stderr, "%6.1fs %s\n", time.Since(start).Seconds(), r.Status)
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for !r.Status.Terminal() && r.Status != receipt.StatusUnknown {
		if live {
			progress(e.stderr, start, r, polls)
		}
		select {
		case <-ctx.Done():
			if live {
				fmt.Fprintln(e.stderr)
			}
			fmt.Fprintf(e.stderr, "stopped waiting after %.1fs; the request goes on: oduflowctl status ... %s\n",
				time.Since(start).Seconds(), r.RequestID)
			return r, ctx.Err()
		case <-ticker.C:
		}
		next, err := status(ctx)
		if err != nil {
			if ctx.Err() != nil {
				continue // reported at the top of the loop
			}
			return r, err
		}
		r = next
		polls++
		if !live && r.Status != last {
			fmt.Fprintf(e.stderr, "%6.1fs %s (polls %d)\n", time.Since(start).Seconds(), r.Status, polls)
		}
		last = r.Status
	}
	if live {
		progress(e.stderr, start, r, polls)
		fmt.Fprintln(e.stderr)
	}
	return r, nil
}

func progress(w io.Writer, start time.Time, r oduflow.Response, polls int) {
	fmt.Fprintf(w, "\r\033[K%6.1fs  %-11s  polls %d", time.Since(start).Seconds(), r.Status, polls)
}
