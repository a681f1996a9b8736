package oduflow

import (
	"context"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/internal/safefile"
)

// The fencing tokens of FileClaimStore: one counter file per client, fence-<minion id> in the claim
// directory (decimal text; not a claim name, so listings and the index scan skip it), read, incremented
// and replaced (WriteAtomic: temporary file, fsync, rename, directory fsync) under the counter's own
// lock (fencelock-<minion id>) and the caller's client lease, inside the intent write and before the
// claim that records the token is written. The counter is durable before any claim holding its value
// can be, so a token is never issued twice: a crash between the two writes only leaves a gap (a token
// never used), which the minion does not mind (it requires tokens to increase, not to be consecutive).
const (
	fenceCounterPfx = "fence-"
	fenceLockPfx    = "fencelock-"
	// maxFenceCounterBytes bounds the counter file (20 digits and a newline).
	maxFenceCounterBytes = 32
)

// errFenceCounter: the client's fence counter cannot be read or is not a token; no intent is written.
var errFenceCounter = errmark.Mark(errors.New("oduflow: fence counter unreadable"), ErrClaimStore)

// issueFenceToken returns the client's next fencing token, durable when it returns.
func (s *FileClaimStore) issueFenceToken(ctx context.Context, minionID string) (uint64, error) {
	lk, err := s.st.LockWait(ctx, fenceLockPfx+minionID, recordLockWait)
	if err != nil {
		return 0, errors.Wrap(err, "oduflow: fence counter lock")
	}
	defer func() { _ = lk.Release() }()
	last, err := s.fenceCounter(minionID)
	if err != nil {
		return 0, err
	}
	if last >= MaxFenceToken {
		return 0, errors.Wrap(errFenceCounter, "fence tokens exhausted")
	}
	next := last + 1
	if err := s.st.WriteAtomic(fenceCounterPfx+minionID, []byte(strconv.FormatUint(next, 10)+"\n")); err != nil {
		if safefile.StorageRefused(err) {
			return 0, errmark.Mark(errors.Wrap(err, "oduflow: write fence counter"), ErrClaimStore)
		}
		return 0, errors.Wrap(err, "oduflow: write fence counter")
	}
	return next, nil
}

// fenceCounter reads the last token issued to the client (0: none yet).
func (s *FileClaimStore) fenceCounter(minionID string) (uint64, error) {
	data, err := s.st.Read(fenceCounterPfx + minionID)
	if errors.Is(err, safefile.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, errmark.Mark(errors.Wrap(err, "oduflow: read fence counter"), errFenceCounter)
	}
	txt, ok := strings.CutSuffix(string(data), "\n")
	if !ok || len(data) > maxFenceCounterBytes {
		return 0, errors.Wrap(errFenceCounter, "malformed")
	}
	n, err := strconv.ParseUint(txt, 10, 64)
	if err != nil || n > MaxFenceToken || strconv.FormatUint(n, 10) != txt {
		return 0, errors.Wrap(errFenceCounter, "malformed")
	}
	return n, nil
}
