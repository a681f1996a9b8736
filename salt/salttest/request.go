package salttest

import (
	"time"

	"github.com/cockroachdb/errors"
)

// Reply strings of the master (msgpack str, not wrapped).
const (
	replyBadLoad   = "bad load"
	replyException = "Some exception handling minion payload"
)

// errException stands for a Python exception inside a ClearFuncs method: the master answers
// replyException.
var errException = errors.New("salttest: exception handling minion payload")

// handleRequest is called by the ROUTER for every request; the work runs in its own goroutine
// (the master has several workers) and is never cancelled by the client going away.
func (s *Master) handleRequest(c *zconn, envelope [][]byte, body []byte) {
	if s.isClosed() {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		cmd, reply := s.process(body)
		if cmd == "publish" {
			reply = s.rewritePublishReply(reply)
		}
		fun := ""
		if cmd == "publish" && s.funFaultArmed() {
			fun = publishFun(body) // decoded again only while a fault waits for a function
		}
		f := s.takeReplyFault(cmd, fun)
		out, err := packSalt(reply)
		if err != nil {
			s.log.Error("cannot encode reply", "cmd", cmd, "err", err)
			out, _ = packSalt(replyException)
		}
		if f.delay > 0 {
			t := time.NewTimer(f.delay)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
		}
		if f.drop {
			s.log.Info("fault: reply dropped", "cmd", cmd)
			return
		}
		if f.malform {
			out = malform(out)
		}
		frames := append(append([][]byte(nil), envelope...), out)
		if err := c.writeFrames(false, frames...); err != nil {
			s.log.Debug("reply not delivered", "cmd", cmd, "err", err)
		}
	}()
}

// process decodes the envelope the way ReqServerChannel.handle_message does and dispatches to
// ClearFuncs. It returns the load's cmd (for fault matching) and the reply value.
func (s *Master) process(body []byte) (string, any) {
	doc, err := unpack(body)
	if err != nil {
		return "", newOmap("msg", replyBadLoad)
	}
	env, ok := doc.(*omap)
	if !ok || !env.Has("enc") || !env.Has("load") {
		return "", replyBadLoad
	}
	version := 0
	if v, ok := env.Get("version"); ok {
		version = toInt(v)
	}
	load, _ := env.Get("load")
	cmd := ""
	if lm, ok := load.(*omap); ok {
		cmd, _ = lm.Str("cmd")
	}
	if s.cfg.minAuthVersion > 0 && version < s.cfg.minAuthVersion {
		s.log.Warn("rejected request with old protocol version", "version", version,
			"minimum", s.cfg.minAuthVersion)
		return cmd, replyBadLoad
	}
	if enc, _ := env.Str("enc"); enc == "aes" {
		// No minion session keys here: decryption fails like a stale key does.
		return cmd, replyBadLoad
	}
	lm, ok := load.(*omap)
	if !ok {
		return cmd, "payload and load must be a dict"
	}
	if id, ok := lm.Get("id"); ok {
		ids, isStr := id.(string)
		if !isStr {
			return cmd, "bad load: id " + pyRepr(id) + " is not a string"
		}
		for i := 0; i < len(ids); i++ {
			if ids[i] == 0 {
				return cmd, "bad load: id contains a null byte"
			}
		}
	}
	if cmd == "_auth" {
		// Minion sign-in is not simulated: answer "not accepted".
		return cmd, newOmap("enc", "clear", "load", newOmap("ret", false))
	}
	if version > 1 {
		lm.Del("nonce")
	}
	if cv, has := lm.Get("cmd"); !has {
		return cmd, replyException
	} else if _, isStr := cv.(string); !isStr {
		return cmd, replyException
	}
	if s.takeException(cmd) {
		s.log.Info("fault: exception before processing", "cmd", cmd)
		return cmd, replyException
	}
	s.log.Debug("request", "cmd", cmd)
	var reply any
	switch cmd {
	case "ping":
		reply, err = lm, nil
	case "publish":
		reply, err = s.publish(lm)
	case "runner":
		reply, err = s.runner(lm)
	case "wheel":
		reply, err = s.wheel(lm)
	case "mk_token":
		reply, err = s.mkToken(lm)
	case "get_token":
		reply, err = s.getToken(lm)
	case "publish_batch":
		err = errException // SUSE only; cannot be called directly
	default:
		reply = &omap{} // not exposed
	}
	if err != nil {
		s.log.Info("request failed", "cmd", cmd, "err", err)
		return cmd, replyException
	}
	return cmd, reply
}

func toInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case uint64:
		return int(x)
	case float64:
		return int(x)
	case bool:
		if x {
			return 1
		}
	case string:
		n := 0
		for i := 0; i < len(x); i++ {
			if x[i] < '0' || x[i] > '9' {
				return 0
			}
			n = n*10 + int(x[i]-'0')
		}
		return n
	}
	return 0
}

// need reads a required load key; a missing key is a Python KeyError (errException).
func need(m *omap, key string) (any, error) {
	v, ok := m.Get(key)
	if !ok {
		return nil, errors.Wrapf(errException, "KeyError: %s", errors.Safe(key))
	}
	return v, nil
}

// funFaultArmed reports whether a reply fault waits for a publish of a named function.
func (s *Master) funFaultArmed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.funArmed()
}

// publishFun is the function a publish request names ("" when it names none).
func publishFun(body []byte) string {
	doc, err := unpack(body)
	if err != nil {
		return ""
	}
	env, ok := doc.(*omap)
	if !ok {
		return ""
	}
	load, _ := env.Get("load")
	lm, ok := load.(*omap)
	if !ok {
		return ""
	}
	fun, _ := lm.Str("fun")
	return fun
}
