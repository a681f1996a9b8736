package main

import (
	"fmt"
	"os"
)

func main() {
	dir := "examples/harness"
	switch len(os.Args) {
	case 1:
	case 2:
		dir = os.Args[1]
	default:
		fmt.Fprintln(os.Stderr, "usage: composecheck [HARNESS_DIR]")
		os.Exit(2)
	}
	problems, err := Check(os.DirFS(dir))
	if err != nil {
		fmt.Fprintf(os.Stderr, "composecheck: %s: %v\n", dir, err)
		os.Exit(1)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "composecheck: %s: %s\n", dir, p)
		}
		os.Exit(1)
	}
	fmt.Printf("composecheck: %s: compose.yaml, master.d, minion.d and harness.env are consistent\n", dir)
}
