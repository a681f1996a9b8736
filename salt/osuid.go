package salt

import "os"

func osGetuid() int { return os.Getuid() }
