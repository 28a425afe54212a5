package localetcd

import (
	"strings"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func zapNop() *zap.Logger { return zap.NewNop() }

// hclogCore sends etcd's zap logs to an hclog logger, so the embedded etcd
// logs like the rest of ringfire.
type hclogCore struct {
	log    hclog.Logger
	level  zapcore.Level
	fields []zapcore.Field
}

func newZapLogger(log hclog.Logger, level string) *zap.Logger {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		lvl = zapcore.ErrorLevel
	}
	return zap.New(&hclogCore{log: log, level: lvl})
}

func (c *hclogCore) Enabled(l zapcore.Level) bool { return l >= c.level }

func (c *hclogCore) With(fields []zapcore.Field) zapcore.Core {
	return &hclogCore{log: c.log, level: c.level, fields: append(append([]zapcore.Field{}, c.fields...), fields...)}
}

func (c *hclogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *hclogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(append([]zapcore.Field{}, c.fields...), fields...) {
		f.AddTo(enc)
	}
	if isShutdownNoise(e.Message, enc.Fields) {
		return nil
	}
	args := make([]any, 0, 2*len(enc.Fields))
	for k, v := range enc.Fields {
		args = append(args, k, v)
	}
	switch {
	case e.Level >= zapcore.ErrorLevel:
		c.log.Error(e.Message, args...)
	case e.Level == zapcore.WarnLevel:
		c.log.Warn(e.Message, args...)
	case e.Level == zapcore.InfoLevel:
		c.log.Info(e.Message, args...)
	default:
		c.log.Debug(e.Message, args...)
	}
	return nil
}

func (c *hclogCore) Sync() error { return nil }

// isShutdownNoise spots the errors etcd logs about its own listeners closing
// when it is stopped on purpose.
func isShutdownNoise(msg string, fields map[string]any) bool {
	if !strings.Contains(msg, "serving from embedded etcd failed") {
		return false
	}
	err, _ := fields["error"].(string)
	return strings.Contains(err, "closed")
}
