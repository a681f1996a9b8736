package oduflow

import "github.com/oduflow/oduflow-go/receipt"

// Profile names what a request runs: one of the fixed profiles below (Start, Status) or custom
// (CustomStart). It is the receipt package's type, so values flow between the two unchanged.
type Profile = receipt.Profile

// The fixed profiles accepted by Start and Status.
const (
	ProfileConfigure    = receipt.ProfileConfigure
	ProfileProduction   = receipt.ProfileProduction
	ProfileVolumeResize = receipt.ProfileVolumeResize
	ProfileCredentials  = receipt.ProfileCredentials
)

// Status is a request's status in a Response: not_started, running, succeeded, failed or unknown.
type Status = receipt.Status

// The statuses of the response contract.
const (
	StatusNotStarted = receipt.StatusNotStarted
	StatusRunning    = receipt.StatusRunning
	StatusSucceeded  = receipt.StatusSucceeded
	StatusFailed     = receipt.StatusFailed
	StatusUnknown    = receipt.StatusUnknown
)

// NewRequestID returns a fresh random request id (a UUID), the caller's handle of one request.
func NewRequestID() string { return receipt.NewRequestID() }
