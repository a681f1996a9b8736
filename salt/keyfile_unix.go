//go:build unix

package salt

import (
	"io"
	"os"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"golang.org/x/sys/unix"
)

// maxKeyFileBytes: a Salt user key is 76 characters plus an optional newline; reading one byte
// more than that is enough to refuse anything longer.
const maxKeyFileBytes = userKeyChars + 1

// readKeyFile reads a Salt user key file safely: no symlink (O_NOFOLLOW), no
// FIFO or device (O_NONBLOCK + regular file check on the opened descriptor),
// no group-write or other permission bits, bounded size, and the content must be
// a Salt user key (parseUserKey): any other file is refused before a byte of it
// could be sent. The content never appears in an error.
func readKeyFile(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return "", errors.Wrapf(ErrKeyFile, "%s is a symlink", errors.Safe(path))
		}
		return "", errors.Wrapf(errmark.Mark(err, ErrKeyFile), "opening %s", errors.Safe(path))
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", errors.Wrapf(errmark.Mark(err, ErrKeyFile), "stat %s", errors.Safe(path))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", errors.Wrapf(ErrKeyFile, "%s is not a regular file", errors.Safe(path))
	}
	if st.Mode&0o027 != 0 {
		return "", errors.Wrapf(ErrKeyFile, "%s has unsafe permissions %#o (group-write or other bits set)", errors.Safe(path), errors.Safe(st.Mode&0o777))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return "", errors.Wrapf(errmark.Mark(err, ErrKeyFile), "reading %s", errors.Safe(path))
	}
	key, ok := parseUserKey(b)
	if !ok {
		// never the content, nor its length beyond the bound: the file may be anything (/etc/shadow)
		return "", errors.Wrapf(ErrKeyFile, "%s is not a Salt user key (76 base64 characters)", errors.Safe(path))
	}
	return key, nil
}
