package filestore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

// The fencing tokens of Store: a per-client counter kept as empty files, fences/<minion id>/t-<N>
// (N in 20 digits), the highest N being the last token issued. Issuing the next token, under the
// counter's lock (fencelock-<minion id> in the claim directory) and inside the intent write:
//
//  1. list the client's names and take N = max(the highest, the caller's floor) + 1 (the floor is the
//     minion's high-water mark, so a new or restored store does not issue tokens the minion refuses);
//  2. create t-<N> (an empty file: nothing to tear) while the claim's temporary file is written, and
//     fsync the client's fence directory concurrently with the claim's fsync (safefile's
//     WriteAtomicAfter: one fsync wait, as the intent cost before fencing);
//  3. only then rename the claim, holding token N, into place and fsync the claim directory;
//  4. discard the lower names (no fsync: a lost removal only leaves a lower name behind).
//
// So a token is durable before any claim holding it can be, and it is never issued twice, also across a
// crash between any two steps: a crash after 2 leaves a name without a claim, a gap the minion does not
// mind (it wants tokens to increase, not to be consecutive). The names are read and created only under
// the lock; the client's directory holds one name, two while an intent is being written.
const (
	fenceDirName   = "fences"
	fenceLockPfx   = "fencelock-"
	fenceTokenPfx  = "t-"
	fenceTokenLen  = 20
	maxFenceNames  = 1024 // more names than this in one client's directory: not written by this store
	fenceTokenForm = "%020d"
)

// errFenceCounter: the client's fence counter cannot be read or holds something else; no intent is written.
var errFenceCounter = errmark.Mark(errors.New("oduflow: fence counter unreadable"), claims.ErrClaimStore)

// fenceIssue is one token being issued: prior creates its name (for WriteAtomicAfter), done discards the
// lower names once the claim holding it is written, release frees the counter's lock.
type fenceIssue struct {
	token   uint64
	prior   safefile.Prior
	lower   []string
	dir     *safefile.Store
	release func()
}

// stageFenceToken takes the counter's lock and reads the client's next token, above floor; the caller
// writes the claim with WriteAtomicAfter(issue.prior) and then calls issue.done and issue.release.
func (s *Store) stageFenceToken(ctx context.Context, minionID string, floor uint64) (*fenceIssue, error) {
	lk, err := s.st.LockWait(ctx, fenceLockPfx+minionID, recordLockWait)
	if err != nil {
		return nil, errors.Wrap(err, "oduflow: fence counter lock")
	}
	fail := func(err error) (*fenceIssue, error) {
		_ = lk.Release()
		return nil, err
	}
	dir, created, err := s.fences.Sub(minionID, true)
	if err != nil {
		return fail(storageErr(errmark.Mark(errors.Wrap(err, "oduflow: fence counter"), errFenceCounter)))
	}
	names, err := dir.List("")
	if err != nil {
		return fail(errmark.Mark(errors.Wrap(err, "oduflow: read fence counter"), errFenceCounter))
	}
	if len(names) > maxFenceNames {
		return fail(errors.Wrap(errFenceCounter, "too many names"))
	}
	var last uint64
	for _, n := range names {
		tok, ok := parseFenceName(n)
		if !ok {
			return fail(errors.Wrap(errFenceCounter, "a name that is not a token"))
		}
		last = max(last, tok)
	}
	last = max(last, floor)
	if last >= claims.MaxFenceToken {
		return fail(errors.Wrap(errFenceCounter, "fence tokens exhausted"))
	}
	next := last + 1
	name := fenceTokenPfx + fmt.Sprintf(fenceTokenForm, next)
	return &fenceIssue{token: next, lower: names, dir: dir, release: func() { _ = lk.Release() },
		prior: func() (func() error, error) {
			sync, err := dir.CreateEmpty(name)
			if err != nil {
				return nil, storageErr(errors.Wrap(err, "oduflow: issue fence token"))
			}
			if !created {
				return sync, nil
			}
			return func() error { // a new client's directory: its entry in fences/ is made durable too
				perr := make(chan error, 1)
				go func() { perr <- s.fences.SyncDir() }()
				err := sync()
				if e := <-perr; err == nil {
					err = e
				}
				return err
			}, nil
		}}, nil
}

// done discards the names below the token just issued (best effort: a name left behind is lower).
func (f *fenceIssue) done() {
	for _, n := range f.lower {
		_ = f.dir.Discard(n)
	}
}

// parseFenceName reads t-<20 digits>.
func parseFenceName(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(name, fenceTokenPfx)
	if !ok || len(digits) != fenceTokenLen {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || n < 1 || n > claims.MaxFenceToken {
		return 0, false
	}
	return n, true
}
