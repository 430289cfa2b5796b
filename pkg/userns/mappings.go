package userns

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
)

// DefaultIDsPerPod is KubeletConfiguration userNamespaces.idsPerPod's
// default, and the unit every idsPerPod is a multiple of.
const DefaultIDsPerPod = 65536

// kubeletUser is the user whose subordinate IDs the kubelet takes.
const kubeletUser = "kubelet"

// IDSource is where the node's ID range comes from: whether the kubelet
// user exists, and its subordinate UID and GID entries.
type IDSource struct {
	// UserExists reports whether the named user exists.
	UserExists func(name string) (bool, error)
	// SubUIDFile and SubGIDFile are /etc/subuid and /etc/subgid.
	SubUIDFile, SubGIDFile string
}

// HostIDs reads the host's users and subordinate ID files.
func HostIDs() IDSource {
	return IDSource{UserExists: userExists, SubUIDFile: "/etc/subuid", SubGIDFile: "/etc/subgid"}
}

func userExists(name string) (bool, error) {
	_, err := user.Lookup(name)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		return false, nil
	}
	return err == nil, err
}

// KubeletMappings is the range of host IDs pods' user namespaces are cut
// from, as the kubelet's getKubeletMappings: without a `kubelet` user,
// every ID from idsPerPod to 2^32; with one, its single subordinate range,
// the same for UIDs and GIDs. The kubelet asks getsubids, which reads
// these files; the answer is checked as the kubelet checks getsubids'.
func KubeletMappings(src IDSource, idsPerPod uint32) (first, length uint32, err error) {
	exists, err := src.UserExists(kubeletUser)
	if err != nil {
		return 0, 0, err
	}
	if !exists {
		return idsPerPod, uint32((1 << 32) - uint64(idsPerPod)), nil
	}
	uids, err := subIDs(src.SubUIDFile, kubeletUser)
	if err != nil {
		return 0, 0, fmt.Errorf("error retrieving additional uids for user %q: %w", kubeletUser, err)
	}
	gids, err := subIDs(src.SubGIDFile, kubeletUser)
	if err != nil {
		return 0, 0, fmt.Errorf("error retrieving additional gids for user %q", kubeletUser)
	}
	if uids != gids {
		return 0, 0, fmt.Errorf("mismatched subuids and subgids for user %q", kubeletUser)
	}
	return parseSubIDs(uids)
}

// subIDs lists owner's ranges in a subid file as getsubids prints them
// ("0: kubelet 65536 2147483648", one line each).
func subIDs(path, owner string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(parts) != 3 || parts[0] != owner {
			continue
		}
		fmt.Fprintf(&b, "%d: %s %s %s\n", n, owner, parts[1], parts[2])
		n++
	}
	return b.String(), sc.Err()
}

// parseSubIDs reads the single range out of getsubids' output, with the
// kubelet's errors.
func parseSubIDs(input string) (uint32, uint32, error) {
	lines := strings.Split(strings.Trim(input, "\n"), "\n")
	if len(lines) != 1 {
		return 0, 0, fmt.Errorf("error parsing line %q: it must contain only one line", input)
	}
	parts := strings.Fields(lines[0])
	if len(parts) != 4 {
		return 0, 0, fmt.Errorf("invalid line %q", input)
	}
	first, err := strconv.ParseUint(parts[2], 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("error parsing line %q: %w", input, err)
	}
	length, err := strconv.ParseUint(parts[3], 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("error parsing line %q: %w", input, err)
	}
	return uint32(first), uint32(length), nil
}
