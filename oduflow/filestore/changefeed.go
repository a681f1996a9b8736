package filestore

import (
	"context"
	"os"
	"strings"
	"unsafe"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/errmark"
)

// WatchChanges implements claims.ChangeFeed with inotify on the claim directory: a claim is written by a
// rename of a private temporary file onto <request id>.json (Create and every compare-and-swap alike), so
// IN_MOVED_TO of such a name is one write, whichever process made it. The kernel's queue can overflow
// under a burst (IN_Q_OVERFLOW): the feed then reports nothing it missed, and the watchers' rechecks see
// the writes, as they see every write without a feed.
func (s *Store) WatchChanges(ctx context.Context, changed func(requestID string)) (err error) {
	defer errmark.Boundary(&err)
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return errors.Wrap(err, "filestore: inotify")
	}
	f := os.NewFile(uintptr(fd), "inotify") // non-blocking: reads wait in the runtime's poller, Close ends them
	defer f.Close()
	if _, err := unix.InotifyAddWatch(fd, s.Dir(), unix.IN_MOVED_TO|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW); err != nil {
		return errors.Wrap(err, "filestore: watch the claim directory")
	}
	stop := context.AfterFunc(ctx, func() { _ = f.Close() })
	defer stop()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errors.Wrap(err, "filestore: read inotify events")
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameLen := int(ev.Len)
			start := off + unix.SizeofInotifyEvent
			if start+nameLen > n {
				break
			}
			name := strings.TrimRight(string(buf[start:start+nameLen]), "\x00")
			off = start + nameLen
			if req, ok := strings.CutSuffix(name, claimSuffix); ok && req != "" && !strings.HasPrefix(req, ".") {
				changed(req)
			}
		}
	}
}
