// Package deploytest holds the tests of the job-array deployment under
// deploy/ (SPEC §11.4), which runs the stages of a distributed run, from
// `vertebrae retrieval plan` to `retrieval from-artifacts`, as Kubernetes
// Indexed Job stages (deploy/k8s), a Slurm array submission (deploy/slurm)
// and the image they run (deploy/Dockerfile).
// The tests parse the manifests' vertebrae command lines against the real
// command tree and, with VERTEBRAE_JOBARRAY_BIN set (deploy/ci/jobarray.sh),
// run them as a simulated job array against an S3-compatible server. They
// run from the deploy directory (TestMain), so paths in messages are the
// manifests' own.
package deploytest
