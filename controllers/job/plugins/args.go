package plugins

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseArgs parses a plugin's arguments with the flags define declares. Go's flag package is what
// Volcano parses them with, so "--port=22", "-port=22" and "--port 22" all work; unlike Volcano, a
// failure is returned, saying which flags the plugin takes.
func parseArgs(args []string, define func(*flag.FlagSet)) error {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		err = errors.New("help was asked for")
	case err == nil && fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		return fmt.Errorf("%v; it takes %s", err, flagList(fs))
	}
	return nil
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

// checkPort refuses a port number outside 1–65535.
func checkPort(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("--port=%d is not a port number (1-65535)", port)
	}
	return nil
}

// checkTaskName refuses an empty task name given to the flag flagName.
func checkTaskName(flagName, task string) error {
	if task == "" {
		return fmt.Errorf("--%s names no task", flagName)
	}
	return nil
}
