package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/test/framework"
)

// The unit file in deploy/ must pass systemd's own checker.
func TestSystemdUnitVerifies(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatal("systemd-analyze missing: hack/setup.sh installs the systemd package")
	}
	unit, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "nodeagent.service"))
	if err != nil {
		t.Fatal(err)
	}
	// Point ExecStart at the binary under test: verify checks it exists.
	text := strings.Replace(string(unit), "/usr/local/bin/nodeagent", agentBin, 1)
	if text == string(unit) {
		t.Fatal("unit has no ExecStart=/usr/local/bin/nodeagent")
	}
	for _, want := range []string{"Type=notify", "Restart=always", "KillMode=process"} {
		if !strings.Contains(text, want) {
			t.Errorf("unit lacks %s", want)
		}
	}
	path := filepath.Join(t.TempDir(), "nodeagent.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	// Without systemd as PID 1, verify still checks the unit; only lines
	// about this unit count.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "nodeagent.service") {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
	if err != nil && strings.Contains(string(out), "nodeagent.service") {
		t.Errorf("systemd-analyze verify failed: %v\n%s", err, out)
	}
}

// Type=notify: the agent tells systemd READY=1 once its first sync is done.
func TestAgentNotifiesSystemdWhenReady(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	a := newAgent(t)
	if err := a.WriteManifest("ready.yaml", imagePod("ready", framework.BusyboxImage, "IfNotPresent")); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(podTimeout))
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("no notification from the agent: %v", err)
	}
	if got := string(buf[:n]); got != "READY=1" {
		t.Errorf("notification %q, want READY=1", got)
	}
}
