package oduflow

import "context"

// claimLockReader is an optional method of a ClaimStore that is also the dispatcher's Leases: the claim
// and whether its request lock is held, read at one instant in one round trip (etcdstore: one read
// transaction instead of two reads). Status uses it; the answer is that of Get then RequestLockHeld,
// with both read at the same point in time.
type claimLockReader interface {
	GetWithRequestLock(ctx context.Context, requestID string) (*Claim, bool, error)
}

// readForStatus reads the claim and, when the store reads both at once, whether its request lock is
// held (nil: not read yet).
func (d *Dispatcher) readForStatus(ctx context.Context, request string) (*Claim, *bool, error) {
	if d.claimLock == nil {
		c, err := d.store.Get(ctx, request)
		return c, nil, err
	}
	c, held, err := d.claimLock.GetWithRequestLock(ctx, request)
	return c, &held, err
}
