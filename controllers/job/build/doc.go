// Package build turns a Volcano Job into the Kubernetes objects ringfire's Job controller creates
// for it: pods, the PodGroup, PVCs. Every function is pure: no clients, no clock, no randomness.
// The controller reads the cache, calls these builders, and makes the writes.
//
// Everything follows Volcano's job controller as read in its source (createJobPod,
// createOrUpdatePodGroup, calcPGMinResources, createJobIOIfNotExist) except where a name must be
// deterministic for ringfire's fencing (a stale owner re-creating an object must hit AlreadyExists,
// never make a second one):
//
//   - A volume without volumeClaimName gets the claim <job>-pvc-<12 characters>. Volcano draws the
//     12 characters at random and writes the name back into the Job's spec; ringfire derives them
//     from the Job's UID and the volume's index (PVCName), so every replica computes the same name.
//   - The pod volume that mounts a claim is named <job>-<12 characters> as in Volcano, but the
//     characters come from the claim name instead of a random draw, so two builds of one pod are
//     equal. A name that would exceed the 63 characters of a volume name is cut short.
//   - Tasks of equal priority keep their spec order when minResources is summed (a stable sort);
//     Volcano's sort.Sort does the same for up to 12 tasks.
//
// Every object carries SlotLabel, the ring slot of its Job, so that replicas can watch only the
// objects of the slots they hold.
package build
