package salt

import (
	"fmt"
	"io/fs"

	"github.com/cockroachdb/errors"
)

// EventBusPermissionError is the error SubscribeEvents returns when the
// event bus's unix socket refuses this process (EACCES/EPERM). It names the
// socket's mode and owner and what to do: Salt 3006 creates the socket 0660
// with eauth (or publisher_acl) configured, else 0600; Salt 3007.8 and the
// 3008 line create it 0660 always (seen live), so the master's user and its
// group may read it. Test with errors.Is(err, ErrEventBusPermission)
// or errors.As.
type EventBusPermissionError struct {
	Path  string      // the socket's path
	Mode  fs.FileMode // its permission bits (0 when it could not be read)
	UID   int         // its owner (-1 when unknown)
	GID   int         // its group (-1 when unknown)
	Owner string      // the owner's user name, or "" when unknown
	Group string      // the group's name, or "" when unknown
	Self  int         // this process's effective uid (-1 when unknown)
	Err   error       // the dial error
}

func (e *EventBusPermissionError) Error() string {
	owner := e.Owner
	if owner == "" {
		owner = fmt.Sprintf("uid %d", e.UID)
	}
	group := e.Group
	if group == "" {
		group = fmt.Sprintf("gid %d", e.GID)
	}
	who := "the master's user"
	if e.Owner != "" {
		who = fmt.Sprintf("the master's user %q", e.Owner)
	}
	return fmt.Sprintf("salt: permission denied on the event bus socket %s (mode %04o, owner %s, group %s; this process runs as uid %d): "+
		"run the controller as %s, or set `ipc_mode: tcp` in the master's config and subscribe to the event bus on loopback "+
		"(tcp://127.0.0.1:<tcp_master_pub_port>); the socket's group may read it only when its mode allows (0660: Salt 3006 with eauth, Salt 3007.8 and later)",
		e.Path, e.Mode.Perm(), owner, group, e.Self, who)
}

// Unwrap returns the dial error.
func (e *EventBusPermissionError) Unwrap() error { return e.Err }

// Is reports ErrEventBusPermission.
func (e *EventBusPermissionError) Is(target error) bool { return target == ErrEventBusPermission }

// eventBusDialError turns a permission error on a unix socket into an
// EventBusPermissionError; any other error is returned as it is.
func eventBusDialError(network, path string, err error) error {
	if network != "unix" || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return socketPermissionError(path, err)
}
