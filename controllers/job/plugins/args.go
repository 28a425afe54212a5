package plugins

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseArgs parses a plugin's arguments with the flags define declares, as Volcano does: with
// Go's flag package, so "--port=22", "-port=22" and "--port 22" all work, stopping at the first
// argument it cannot take. The flags before that argument take effect; it and those after it are
// ignored, and the others keep their defaults. What was ignored is returned (nil when nothing
// was): it never stops the plugin, as in Volcano, which only logs it.
func parseArgs(args []string, define func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		err = errors.New("help was asked for")
	case err == nil && fs.NArg() > 0:
		// The flag package stops at the first argument that is not a flag, without an error.
		err = fmt.Errorf("%q is not a flag", fs.Arg(0))
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%v: it and the arguments after it are ignored (the plugin takes %s)", err, flagList(fs))
}

// flagList names the flags of fs: "--a=<value>, --b".
func flagList(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			names = append(names, "--"+f.Name)
		} else {
			names = append(names, "--"+f.Name+"=<value>")
		}
	})
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, ", ")
}

// checkPort refuses a port number outside 1–65535 given to the flag flagName. Such a port ends
// up in a container's ports or a Service, which the API server refuses: the plugin would only
// fail later, on every pod.
func checkPort(flagName string, port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("--%s=%d is not a port number (1-65535)", flagName, port)
	}
	return nil
}

// ignoredArgs is embedded in every plugin: what its parse ignored.
type ignoredArgs struct{ ignored error }

// Ignored is the error the parse of the plugin's arguments met, nil when all were taken.
func (a ignoredArgs) Ignored() error { return a.ignored }
