// Package deploy holds the job-array deployment of a complete evaluation
// (SPEC §11.4): Kubernetes Indexed Job stages (deploy/k8s), a Slurm array
// submission (deploy/slurm) and the image they run (deploy/Dockerfile).
// There is no Go API here; the tests check the manifests against the real
// vertebrae command tree and, with VERTEBRAE_JOBARRAY_BIN set
// (deploy/ci/jobarray.sh), run them as a simulated job array against an
// S3-compatible server.
package deploy
