package salttest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
)

// ErrClosed is returned by operations on a closed Master.
var ErrClosed = errors.New("salttest: master closed")

// Master is a running fake Salt 3006 master. All methods are safe for concurrent use.
type Master struct {
	cfg     config
	log     *slog.Logger
	ownsDir bool
	keyPath string

	// std is the generic minion's handler (standard(cfg.roles)): stateless, built once and shared
	// by every minion added without a handler of its own (a fleet of 10,000 holds one).
	std MinionHandler

	ctx    context.Context // cancelled by Close: stops minion handlers and delayed replies
	cancel context.CancelFunc
	wg     sync.WaitGroup // request workers, minion jobs, runners, heartbeat loop

	lifeMu  sync.Mutex // serialises Start/Restart/Close
	closed  bool
	reqAddr string
	router  *zrouter
	bus     *eventBus

	state stateSignal // WaitUntil's wake-ups

	mu           sync.Mutex
	rootKey      string
	tokens       map[string]tokenData
	minions      map[string]*minion
	funcs        map[string]MinionHandler // RegisterFunc: run by every minion
	publications []Publication
	returns      map[string]map[string]any // jid -> minion id -> return (for jobs.lookup_jid)
	faults       faults
	jids         jidGen
	pid          int
	mirrors      []*Master // MirrorReturnsTo: masters whose bus also gets every return
}

// Start binds the request server and the event bus and returns a running Master. ctx bounds
// the start only (binding); the Master runs until Close.
func Start(ctx context.Context, opts ...Option) (*Master, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.minAuthSet {
		cfg.minAuthVersion = cfg.generation.defaultMinAuthVersion()
	}
	s := &Master{cfg: cfg, log: cfg.logger, tokens: map[string]tokenData{}, minions: map[string]*minion{},
		funcs: map[string]MinionHandler{}, returns: map[string]map[string]any{}, pid: 1000,
		std: standard(cfg.roles)}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.dir == "" {
		d, err := os.MkdirTemp("", "salttest-")
		if err != nil {
			return nil, errors.Wrap(err, "salttest: temp dir")
		}
		s.cfg.dir, s.ownsDir = d, true
	}
	s.keyPath = filepath.Join(s.cfg.dir, ".root_key")
	for _, t := range cfg.tokens {
		s.tokens[t.Token] = t
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	key := cfg.rootKey
	if key == "" {
		key = newKeyString()
	}
	if err := s.writeKey(key); err != nil {
		s.cleanup()
		return nil, err
	}
	if err := s.bind(ctx); err != nil {
		s.cleanup()
		return nil, err
	}
	if cfg.heartbeat > 0 {
		s.wg.Add(1)
		go s.heartbeatLoop()
	}
	s.log.Info("salttest master started", "request", s.Addr(), "events", s.EventsAddr(),
		"framing", cfg.framing.String())
	return s, nil
}

func (s *Master) cleanup() {
	s.cancel()
	if s.ownsDir {
		_ = os.RemoveAll(s.cfg.dir)
	}
}

// bind opens the request listener and the event bus; after Restart it reuses the addresses.
func (s *Master) bind(ctx context.Context) error {
	addr := s.cfg.requestAddr
	if s.reqAddr != "" {
		addr = s.reqAddr
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return errors.Wrap(err, "salttest: listen request port")
	}
	s.reqAddr = ln.Addr().String()
	bus, err := startEventBus(ctx, s, s.bus)
	if err != nil {
		_ = ln.Close()
		return err
	}
	s.bus = bus
	s.router = newZRouter(ln, s.cfg.maxRequestBytes, s.handleRequest, func(err error) {
		s.log.Debug("request connection ended", "err", err)
	})
	return nil
}

// Addr is the request (ret_port) endpoint, "tcp://127.0.0.1:<port>", for salt.NewClient.
func (s *Master) Addr() string {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	return "tcp://" + s.reqAddr
}

// EventsAddr is the event bus endpoint, "unix://<dir>/master_event_pub.ipc", for salt.SubscribeEvents.
func (s *Master) EventsAddr() string { return "unix://" + s.eventSocketPath() }

// eventSocketPath is the file system path of the event bus unix socket.
func (s *Master) eventSocketPath() string { return filepath.Join(s.cfg.dir, "master_event_pub.ipc") }

// eventTCPAddr is "tcp://127.0.0.1:<port>" when WithEventTCP was given, else "".
func (s *Master) eventTCPAddr() string {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.bus == nil || s.bus.tcpAddr == "" {
		return ""
	}
	return "tcp://" + s.bus.tcpAddr
}

// KeyFile is the path of .root_key (mode 0600); its content is the current root key.
func (s *Master) KeyFile() string { return s.keyPath }

// currentRootKey returns the current root key.
func (s *Master) currentRootKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rootKey
}

// RotateKey replaces the root key (and its file) now, as a master restart does.
func (s *Master) RotateKey() error { return s.writeKey(newKeyString()) }

func (s *Master) writeKey(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	tmp := s.keyPath + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return errors.Wrap(err, "salttest: write root key")
	}
	_, werr := f.WriteString(key)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp)
		return errors.Wrap(errors.CombineErrors(werr, cerr), "salttest: write root key")
	}
	if err := os.Rename(tmp, s.keyPath); err != nil {
		return errors.Wrap(err, "salttest: write root key")
	}
	s.rootKey = key
	return nil
}

// newKeyString makes a Crypticle-style key string: base64 of 56 random bytes (76 chars).
func newKeyString() string {
	b := make([]byte, 56)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// Restart simulates a master restart: it closes the request server and the event bus (every
// reader is disconnected, in-flight requests lose their connection), rotates the root key and
// binds the same addresses again. Minions, tokens and job history survive, as they do in Salt.
func (s *Master) Restart(ctx context.Context) error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.closeGrace)
	s.router.close(cctx)
	cancel()
	s.bus.close()
	if err := s.RotateKey(); err != nil {
		return err
	}
	if err := s.bind(ctx); err != nil {
		return errors.Wrap(err, "salttest: rebind after restart")
	}
	s.log.Info("salttest master restarted")
	return nil
}

// SendHeartbeat sends a ZMTP PING command to every connected request peer.
func (s *Master) SendHeartbeat() { s.heartbeat() }

// heartbeat is SendHeartbeat returning how many peers the PING reached.
func (s *Master) heartbeat() int {
	s.lifeMu.Lock()
	r := s.router
	s.lifeMu.Unlock()
	if r == nil {
		return 0
	}
	return r.heartbeat()
}

func (s *Master) heartbeatLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.heartbeat()
		}
	}
}

// CloseEventBus disconnects every current event-bus reader; new connections are accepted.
func (s *Master) CloseEventBus() {
	s.lifeMu.Lock()
	b := s.bus
	s.lifeMu.Unlock()
	if b != nil {
		b.dropReaders()
	}
}

// StallEventBus models a blocked event publisher (on Salt 3007+ one subscriber that stops reading
// blocks it for every reader): while stalled, every reader stays connected and receives nothing; events
// fired meanwhile are lost. Requests (publishes included) are answered as usual.
func (s *Master) StallEventBus(stalled bool) {
	s.lifeMu.Lock()
	b := s.bus
	s.lifeMu.Unlock()
	if b != nil {
		if stalled {
			b.acceptNow() // the returns queued below reach every reader connected before they were fired
		}
		b.mu.Lock()
		if stalled {
			b.giveQueuedLocked() // returns fired before the stall go out, as if given at once
		}
		b.stalled = stalled
		b.mu.Unlock()
	}
}

// EventReaders is the number of connected event-bus readers (a service test can wait for its subscription).
func (s *Master) EventReaders() int {
	s.lifeMu.Lock()
	b := s.bus
	s.lifeMu.Unlock()
	if b == nil {
		return 0
	}
	return b.readerCount()
}

// Close stops everything: listeners, connections, minion handlers (their context is
// cancelled). It waits up to the close grace for goroutines to finish.
func (s *Master) Close() error {
	s.lifeMu.Lock()
	if s.closed {
		s.lifeMu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.closeGrace)
	defer cancel()
	s.router.close(ctx)
	s.bus.close()
	s.lifeMu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.New("salttest: handlers did not stop within the close grace")
	}
	if s.ownsDir {
		_ = os.RemoveAll(s.cfg.dir)
	}
	return err
}

func (s *Master) isClosed() bool { return s.ctx.Err() != nil }

// PKIDir is the simulated master's pki_dir (<Dir>/pki/master): minions/<id> holds the public key the
// master accepted for each minion (see AcceptMinionKey).
func (s *Master) PKIDir() string { return filepath.Join(s.cfg.dir, "pki", "master") }

// AcceptMinionKey stores pubPEM as the accepted key of minion id, as `salt-key -a` leaves it.
func (s *Master) AcceptMinionKey(id string, pubPEM []byte) error {
	if id == "" || strings.ContainsAny(id, "/\x00") || id == "." || id == ".." {
		return errors.New("salttest: unsafe minion id")
	}
	dir := filepath.Join(s.PKIDir(), "minions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, id), pubPEM, 0o644)
}
