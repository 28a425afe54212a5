package membership

import (
	"reflect"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultConfig has every default docs/design.md lists, and SetTTL moves
// the timings that follow from the TTL with it.
func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	if c.Prefix != "/ringfire" || c.TTL != 5*time.Second || c.KeepAliveInterval != 5*time.Second/3 ||
		c.FenceMargin != time.Second || c.RenewRetry != 250*time.Millisecond ||
		c.JoinRetry.Min != 100*time.Millisecond || c.JoinRetry.Max != 5*time.Second || c.Clock == nil || c.Logger == nil {
		t.Errorf("DefaultConfig = %+v", c)
	}
	for ttl, want := range map[time.Duration][3]time.Duration{
		0:                       {time.Second, time.Second / 3, 500 * time.Millisecond},
		1400 * time.Millisecond: {time.Second, time.Second / 3, 500 * time.Millisecond},
		2 * time.Second:         {2 * time.Second, 2 * time.Second / 3, 500 * time.Millisecond},
		10 * time.Second:        {10 * time.Second, 10 * time.Second / 3, 2 * time.Second},
	} {
		c := DefaultConfig()
		c.SetTTL(ttl)
		if got := [3]time.Duration{c.TTL, c.KeepAliveInterval, c.FenceMargin}; got != want {
			t.Errorf("SetTTL(%v): TTL, keep-alive, margin %v, want %v", ttl, got, want)
		}
	}
}

// Validate says what is wrong, fills nothing in and changes nothing.
func TestConfigValidate(t *testing.T) {
	for name, change := range map[string]func(*Config){
		"valid":                    func(*Config) {},
		"valid (TTL 1s)":           func(c *Config) { c.SetTTL(time.Second) },
		"valid (margin set apart)": func(c *Config) { c.FenceMargin = 2 * time.Second },
		"no client":                func(c *Config) { c.Client = nil },
		"id with a slash":          func(c *Config) { c.ID = "a/b" },
		"prefix ends in a slash":   func(c *Config) { c.Prefix = "/ringfire/" },
		"TTL not whole seconds":    func(c *Config) { c.TTL = 2500 * time.Millisecond },
		"zero TTL":                 func(c *Config) { c.TTL = 0 },
		"zero keep-alive":          func(c *Config) { c.KeepAliveInterval = 0 },
		"zero fence margin":        func(c *Config) { c.FenceMargin = 0 },
		"zero renew retry":         func(c *Config) { c.RenewRetry = 0 },
		"keep-alive past fence":    func(c *Config) { c.KeepAliveInterval = 4 * time.Second },
		"zero join retry":          func(c *Config) { c.JoinRetry.Min = 0 },
		"no logger":                func(c *Config) { c.Logger = nil },
		"no clock":                 func(c *Config) { c.Clock = nil },
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			c.Client, c.ID = &clientv3.Client{}, "r0"
			change(&c)
			before := c
			err := c.Validate()
			if valid := strings.HasPrefix(name, "valid"); (err == nil) != valid {
				t.Errorf("Validate = %v, want valid %v", err, valid)
			}
			if !reflect.DeepEqual(before, c) {
				t.Errorf("Validate changed the config: %+v, was %+v", c, before)
			}
		})
	}
}
