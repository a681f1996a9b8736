//go:build unix

package authfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxHops bounds the symbolic links followed to a file.
const maxHops = 16

// ownerOK: this process's user or root.
func ownerOK(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

func statOf(fi fs.FileInfo) *syscall.Stat_t {
	st, _ := fi.Sys().(*syscall.Stat_t)
	return st
}

// safeDir checks the (symlink-free, absolute) directory dir that holds an entry owned by entryUID, and
// every directory above it: none writable by others, except a sticky one for an entry (or a directory)
// owned by this user or root; dir itself owned by this user or root.
func safeDir(env, dir string, entryUID uint32) error {
	for d, child, first := dir, entryUID, true; ; first = false {
		fi, err := os.Lstat(d)
		if err != nil {
			return refuse(env, "cannot stat a directory on its path: %s", errnoText(err))
		}
		st := statOf(fi)
		if !fi.IsDir() || st == nil {
			return refuse(env, "a component of its path is not a directory")
		}
		if first && !ownerOK(st.Uid) {
			return refuse(env, "in a directory owned by another user")
		}
		if fi.Mode().Perm()&0o022 != 0 && (fi.Mode()&fs.ModeSticky == 0 || !ownerOK(child)) {
			return refuse(env, "in a directory others can write (mode %04o): anyone could replace it", fi.Mode().Perm())
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil
		}
		d, child = parent, st.Uid
	}
}

// resolve follows path to the file it names, checking each hop's directory and each link's owner; it
// answers the file's real path and its Lstat.
func resolve(env, path string) (string, fs.FileInfo, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return "", nil, refuse(env, "cannot resolve the path")
	}
	return walkLinks(env, p, "cannot open the file", "cannot stat the file")
}

// walkLinks follows p hop by hop: each hop's directory must be safe (safeDir), each symbolic link owned by
// the service or root, at most maxHops of them. It answers the real path and its Lstat; failing and
// unstat-able hops are refused with failed and unstatable.
func walkLinks(env, p, failed, unstatable string) (string, fs.FileInfo, error) {
	for range maxHops {
		dir, base := filepath.Split(filepath.Clean(p))
		rdir, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return "", nil, refuse(env, "%s: %s", failed, errnoText(err))
		}
		real := filepath.Join(rdir, base)
		fi, err := os.Lstat(real)
		if err != nil {
			return "", nil, refuse(env, "%s: %s", failed, errnoText(err))
		}
		st := statOf(fi)
		if st == nil {
			return "", nil, refuse(env, "%s", unstatable)
		}
		if err := safeDir(env, rdir, st.Uid); err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return real, fi, nil
		}
		if !ownerOK(st.Uid) {
			return "", nil, refuse(env, "a symbolic link owned by another user")
		}
		target, err := os.Readlink(real)
		if err != nil {
			return "", nil, refuse(env, "cannot read a symbolic link: %s", errnoText(err))
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(rdir, target)
		}
		p = target
	}
	return "", nil, refuse(env, "more than %d symbolic links", maxHops)
}

func read(env, path string, o Options) ([]byte, error) {
	real, lfi, err := resolve(env, path)
	if err != nil {
		return nil, err
	}
	if !lfi.Mode().IsRegular() {
		return nil, refuse(env, "not a regular file")
	}
	// O_NONBLOCK: a FIFO or a device swapped in after the Lstat is opened without waiting and refused
	// by the Fstat below; O_NOFOLLOW: no link swapped in either.
	fd, err := syscall.Open(real, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, refuse(env, "cannot open the file: %s", err.Error())
	}
	f := os.NewFile(uintptr(fd), "authority file")
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, refuse(env, "cannot stat the file: %s", errnoText(err))
	}
	st, lst := statOf(fi), statOf(lfi)
	if !fi.Mode().IsRegular() || st == nil {
		return nil, refuse(env, "not a regular file")
	}
	if st.Dev != lst.Dev || st.Ino != lst.Ino {
		return nil, refuse(env, "the file changed while it was opened")
	}
	if !ownerOK(st.Uid) {
		return nil, refuse(env, "owned by another user (uid %d): want this process's user or root", st.Uid)
	}
	perm := fi.Mode().Perm()
	if o.Private && perm&0o077 != 0 {
		return nil, refuse(env, "mode %04o is group or world accessible: want 0600 or 0400 (chmod 600)", perm)
	}
	if perm&0o022 != 0 {
		return nil, refuse(env, "mode %04o is group or world writable: want 0644 or stricter (chmod go-w)", perm)
	}
	if fi.Size() > o.MaxBytes {
		return nil, refuse(env, "over %d bytes", o.MaxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, o.MaxBytes+1))
	if err != nil {
		return nil, refuse(env, "cannot read the file: %s", errnoText(err))
	}
	if int64(len(b)) > o.MaxBytes {
		return nil, refuse(env, "over %d bytes", o.MaxBytes)
	}
	return b, nil
}

func checkDir(env, path string) error {
	p, err := filepath.Abs(path)
	if err != nil {
		return refuse(env, "cannot resolve the path")
	}
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		// Created later (0700): what matters now is where.
		parent, perr := filepath.EvalSymlinks(filepath.Dir(p))
		if perr != nil {
			return refuse(env, "cannot resolve the directory: %s", errnoText(perr))
		}
		return safeDir(env, parent, uint32(os.Geteuid()))
	}
	if err != nil {
		return refuse(env, "cannot resolve the directory: %s", errnoText(err))
	}
	// Each symbolic link on the way sits in a directory others cannot write.
	if _, _, err := resolveDirLinks(env, p); err != nil {
		return err
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return refuse(env, "cannot stat the directory: %s", errnoText(err))
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return refuse(env, "mode %04o is group or world writable: want 0700 (chmod 700)", fi.Mode().Perm())
	}
	return safeDir(env, real, uint32(os.Geteuid()))
}

// resolveDirLinks checks the directory holding each link that p goes through to its directory.
func resolveDirLinks(env, p string) (string, fs.FileInfo, error) {
	real, fi, err := walkLinks(env, p, "cannot resolve the directory", "cannot stat the directory")
	if err != nil {
		return "", nil, err
	}
	if !fi.IsDir() {
		return "", nil, refuse(env, "not a directory")
	}
	return real, fi, nil
}
