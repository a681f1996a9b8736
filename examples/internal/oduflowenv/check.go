package oduflowenv

import (
	"path/filepath"
	"strings"

	"github.com/oduflow/oduflow-go/salt"
)

// CheckMaster checks that the master (and, with events, the event bus) is named in the expected form and
// that credentials are set: a key file, or eauth, user and password. cmd prefixes the message.
func (s Settings) CheckMaster(cmd string, events bool) error {
	if s.Master == "" {
		if s.EnvOnly {
			return usagef("%s: missing ODUFLOW_SALT_MASTER, e.g. tcp://127.0.0.1:4506", cmd)
		}
		return usagef("%s: missing --master (or ODUFLOW_SALT_MASTER), e.g. tcp://127.0.0.1:4506", cmd)
	}
	if !strings.HasPrefix(s.Master, "tcp://") {
		return usagef("%s: %s %q: want tcp://host:port", cmd, s.name("--master", "ODUFLOW_SALT_MASTER"), s.Master)
	}
	if events {
		if err := s.CheckEvents(cmd); err != nil {
			return err
		}
	}
	if s.KeyFile == "" && (s.Eauth == "" || s.User == "") {
		if s.EnvOnly {
			return usagef("%s: no credentials: set ODUFLOW_SALT_KEY_FILE, or ODUFLOW_SALT_EAUTH, ODUFLOW_SALT_USER and ODUFLOW_SALT_PASSWORD", cmd)
		}
		return usagef("%s: no credentials: set --key-file (ODUFLOW_SALT_KEY_FILE), or --eauth, --user and ODUFLOW_SALT_PASSWORD", cmd)
	}
	if s.KeyFile == "" && s.Password == "" {
		return usagef("%s: %s needs the password in ODUFLOW_SALT_PASSWORD", cmd, s.name("--eauth", "ODUFLOW_SALT_EAUTH"))
	}
	return nil
}

// CheckEvents checks that the event bus is named, as a unix or tcp address.
func (s Settings) CheckEvents(cmd string) error {
	if s.Events == "" {
		if s.EnvOnly {
			return usagef("%s: missing ODUFLOW_SALT_EVENTS, e.g. unix:///var/run/salt/master/master_event_pub.ipc", cmd)
		}
		return usagef("%s: missing --events (or ODUFLOW_SALT_EVENTS), e.g. unix:///var/run/salt/master/master_event_pub.ipc", cmd)
	}
	if !strings.HasPrefix(s.Events, "unix://") && !strings.HasPrefix(s.Events, "tcp://") {
		return usagef("%s: %s %q: want unix:///path or tcp://host:port", cmd, s.name("--events", "ODUFLOW_SALT_EVENTS"), s.Events)
	}
	return nil
}

// KeyUser derives the Salt user from a key file name: ".root_key" -> "root".
func KeyUser(keyFile string) string {
	base := filepath.Base(keyFile)
	if strings.HasPrefix(base, ".") && strings.HasSuffix(base, "_key") && len(base) > len("._key") {
		return strings.TrimSuffix(strings.TrimPrefix(base, "."), "_key")
	}
	return "root"
}

// CheckKeyFile reads the user key file, when one is named, as every request will (salt.CheckUserKey): a
// missing, unsafe (group or other bits, a symlink) or malformed file is an ErrUsage error before anything
// starts, with what the file must be.
func (s Settings) CheckKeyFile() error {
	if s.KeyFile == "" {
		return nil
	}
	if err := salt.CheckUserKey(s.KeyFile); err != nil {
		return configf(err, "%s", s.name("--key-file", "ODUFLOW_SALT_KEY_FILE"))
	}
	return nil
}
