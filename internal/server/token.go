package server

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// TokenEnv is the environment variable labserver serve reads the
// instructor token from when neither -token nor -token-file is given.
const TokenEnv = "KVLAB_TOKEN"

// tokenFrom picks the instructor token from its three sources: the
// -token flag (any local user can read it in the process list), the file
// named by -token-file (only who may read the file; the one to prefer),
// or the environment variable TokenEnv (only this user and root, but
// every process labserver starts inherits it). At most one of the flags
// may be given; the environment is read only when neither is.
func tokenFrom(flagToken, file string, getenv func(string) string) (string, error) {
	switch {
	case flagToken != "" && file != "":
		return "", errors.New("-token and -token-file: give one or the other, not both")
	case flagToken != "":
		return flagToken, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("-token-file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("-token-file %s: the file is empty; put the token on its first line", file)
		}
		if strings.ContainsAny(tok, "\r\n") {
			return "", fmt.Errorf("-token-file %s: the token must be one line", file)
		}
		return tok, nil
	}
	return strings.TrimSpace(getenv(TokenEnv)), nil
}
