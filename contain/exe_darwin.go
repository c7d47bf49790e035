package contain

import "os"

func selfExe() (string, error) { return os.Executable() }
