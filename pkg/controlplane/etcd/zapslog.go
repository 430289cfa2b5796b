package etcd

import (
	"context"
	"log/slog"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore forwards etcd's zap records at warn level and above to slog,
// without stack traces. Once the server is being closed, records are
// demoted to debug: etcd reports its own listeners closing as errors.
type slogCore struct {
	log     *slog.Logger
	fields  []zapcore.Field
	closing *atomic.Bool
}

// benign are etcd warnings that do not apply to a loopback member without
// etcd auth; they are logged at debug.
var benign = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
}

func newZapLogger(log *slog.Logger, closing *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{log: log, closing: closing})
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	cp := *c
	cp.fields = append(append([]zapcore.Field(nil), c.fields...), fields...)
	return &cp
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slog.LevelWarn
	switch {
	case c.closing.Load(), benign[e.Message]:
		level = slog.LevelDebug
	case e.Level >= zapcore.ErrorLevel:
		level = slog.LevelError
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]any, 0, 2*len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, k, v)
	}
	c.log.Log(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
