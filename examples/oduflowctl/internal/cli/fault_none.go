//go:build !faultinject

package cli

import "github.com/oduflow/oduflow-go/oduflow"

// faultOptions is empty without the faultinject build tag: no fault point is compiled in and
// ODUFLOW_FAULT_STOP_AT means nothing (see fault_inject.go).
func (e *env) faultOptions() ([]oduflow.Option, error) { return nil, nil }
