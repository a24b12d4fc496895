package kubecheck

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
)

// Image is what the manifests must agree with in the image the Dockerfile
// builds: the agent user's ids, its home, where agentmux keeps its data,
// the workspace and the listen address, and the entrypoint.
type Image struct {
	UID, GID   int64
	Home       string // the agent user's home, which must be on a volume
	DataDir    string // AGENTMUX_DATA_DIR
	Workspace  string // AGENTMUX_WORKSPACE
	Addr       string // AGENTMUX_ADDR
	Entrypoint string
}

var dockerfileFacts = []struct {
	name string
	re   *regexp.Regexp
}{
	{"ARG AGENT_UID", regexp.MustCompile(`(?m)^ARG AGENT_UID=(\d+)\s*$`)},
	{"ARG AGENT_GID", regexp.MustCompile(`(?m)^ARG AGENT_GID=(\d+)\s*$`)},
	{"useradd --home-dir", regexp.MustCompile(`--home-dir\s+(/\S+)`)},
	{"ENV AGENTMUX_DATA_DIR", regexp.MustCompile(`\bAGENTMUX_DATA_DIR=(/[^\s\\]+)`)},
	{"ENV AGENTMUX_WORKSPACE", regexp.MustCompile(`\bAGENTMUX_WORKSPACE=(/[^\s\\]+)`)},
	{"ENV AGENTMUX_ADDR", regexp.MustCompile(`\bAGENTMUX_ADDR=([^\s\\]+)`)},
	{"ENTRYPOINT", regexp.MustCompile(`(?m)^ENTRYPOINT\s+(.+)$`)},
}

// ReadDockerfile reads the facts of Image from the repository's Dockerfile,
// so that the manifests are checked against the image as it is, not as it
// was when they were written.
func ReadDockerfile(path string) (Image, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Image{}, err
	}
	return ParseDockerfile(b)
}

// ParseDockerfile is ReadDockerfile on the file's contents.
func ParseDockerfile(b []byte) (Image, error) {
	var v [7]string
	for i, f := range dockerfileFacts {
		m := f.re.FindSubmatch(b)
		if m == nil {
			return Image{}, fmt.Errorf("Dockerfile: found no %s (the deploy checks read it; update kubecheck/image.go if the Dockerfile changed shape)", f.name)
		}
		v[i] = string(m[1])
	}
	uid, _ := strconv.ParseInt(v[0], 10, 64)
	gid, _ := strconv.ParseInt(v[1], 10, 64)
	return Image{UID: uid, GID: gid, Home: v[2], DataDir: v[3], Workspace: v[4], Addr: v[5], Entrypoint: v[6]}, nil
}
