//go:build unix

package salt

import (
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// socketPermissionError describes path's mode and owner (best effort: a
// directory on the way may refuse the stat itself).
func socketPermissionError(path string, err error) *EventBusPermissionError {
	e := &EventBusPermissionError{Path: path, UID: -1, GID: -1, Self: os.Geteuid(), Err: err}
	fi, serr := os.Stat(path)
	if serr != nil {
		return e
	}
	e.Mode = fi.Mode()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.UID, e.GID = int(st.Uid), int(st.Gid)
		if u, lerr := user.LookupId(strconv.Itoa(e.UID)); lerr == nil {
			e.Owner = u.Username
		}
		if g, lerr := user.LookupGroupId(strconv.Itoa(e.GID)); lerr == nil {
			e.Group = g.Name
		}
	}
	return e
}
