//go:build !unix

package salt

// socketPermissionError: no mode or owner to read on this platform.
func socketPermissionError(path string, err error) *EventBusPermissionError {
	return &EventBusPermissionError{Path: path, UID: -1, GID: -1, Self: -1, Err: err}
}
