// Package pullrecords is the kubelet's record of the images it pulled and
// with which credentials (KEP-2535, "ensure secret pulled images", beta
// and on by default since v1.35), so that a pod asking for an image
// already on the node may use it only if it could pull it: the image was
// pulled anonymously or with the node's credentials, or the pod's pull
// secrets hold the same secret or the same credential. Otherwise the
// kubelet pulls again with the pod's credentials.
//
// Only upstream's default policy, NeverVerifyPreloadedImages, is
// implemented: images the agent never pulled (no record, no pull in
// flight or interrupted) are anyone's. Records survive restarts as JSON
// files under <root>/image_manager: pulling/ holds an intent per image
// while its pull runs (an interrupted pull leaves the image unverifiable,
// so it must be pulled again), pulled/ a record per image ID.
package pullrecords
