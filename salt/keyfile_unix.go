//go:build unix

package salt

import (
	"io"
	"os"
	"sync"
	"time"

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
	key, _, err := readKeyFileStat(path)
	return key, err
}

// keyCache remembers the last key read from a file with the identity of the file it was read
// from. Reading a key file is an open, an fstat, a read and a close per request (tens of
// microseconds of a publish); an lstat that finds the very same file (device, inode, type and
// permission bits, size, modification and change times: a rewrite of the key, a rename over it,
// a chmod or a symlink put in its place all change one of them) gives the same content without
// them. Anything else reads the file again, with every check of readKeyFile.
//
// File times have a coarse granularity (a clock tick on many kernels): two writes within one tick
// can leave the same times. So a key is cached only once its file has not changed for
// keyStableAge; a later rewrite then necessarily gets later times.
type keyCache struct {
	mu     sync.Mutex
	id     keyFileID
	key    string
	stable time.Duration // 0: keyStableAge (tests shorten it)
}

// keyStableAge is how long a key file must have been unchanged before its key is cached.
const keyStableAge = time.Second

// keyFileID is what identifies one version of a file.
type keyFileID struct {
	dev, ino, size   uint64
	mode             uint32
	mtimeNs, ctimeNs int64
}

func fileID(st *unix.Stat_t) keyFileID {
	return keyFileID{dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size), mode: st.Mode,
		mtimeNs: st.Mtim.Nano(), ctimeNs: st.Ctim.Nano()}
}

// read returns the key of path, from the cache when path is still the file it was read from.
// A nil cache reads the file.
func (c *keyCache) read(path string) (string, error) {
	if c == nil {
		return readKeyFile(path)
	}
	var st unix.Stat_t
	if unix.Lstat(path, &st) == nil {
		id := fileID(&st)
		c.mu.Lock()
		key := c.key
		hit := key != "" && c.id == id
		c.mu.Unlock()
		if hit {
			return key, nil
		}
	}
	key, id, err := readKeyFileStat(path)
	c.mu.Lock()
	stable := c.stable
	if stable == 0 {
		stable = keyStableAge
	}
	if err != nil || time.Since(time.Unix(0, id.ctimeNs)) < stable {
		c.key, c.id = "", keyFileID{} // refused, or changed too recently to be told from a rewrite
	} else {
		c.key, c.id = key, id
	}
	c.mu.Unlock()
	return key, err
}

// readKeyFileStat is readKeyFile that also returns the identity of the file read.
func readKeyFileStat(path string) (string, keyFileID, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP {
			return "", keyFileID{}, errors.Wrapf(ErrKeyFile, "%s is a symlink", errors.Safe(path))
		}
		return "", keyFileID{}, errors.Wrapf(errmark.Mark(err, ErrKeyFile), "opening %s", errors.Safe(path))
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", keyFileID{}, errors.Wrapf(errmark.Mark(err, ErrKeyFile), "stat %s", errors.Safe(path))
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", keyFileID{}, errors.Wrapf(ErrKeyFile, "%s is not a regular file", errors.Safe(path))
	}
	if st.Mode&0o027 != 0 {
		return "", keyFileID{}, errors.Wrapf(ErrKeyFile, "%s has unsafe permissions %#o (group-write or other bits set; want 0600 or 0640)", errors.Safe(path), errors.Safe(st.Mode&0o777))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return "", keyFileID{}, errors.Wrapf(errmark.Mark(err, ErrKeyFile), "reading %s", errors.Safe(path))
	}
	key, ok := parseUserKey(b)
	if !ok {
		// never the content, nor its length beyond the bound: the file may be anything (/etc/shadow)
		return "", keyFileID{}, errors.Wrapf(ErrKeyFile, "%s is not a Salt user key (want the master's <cachedir>/.<user>_key, e.g. /var/cache/salt/master/.root_key: one line of 76 base64 characters)", errors.Safe(path))
	}
	return key, fileID(&st), nil
}
