"""Attestation: verify SEV-SNP reports, Azure HCL reports with TPM quotes and TDX quotes, and bind
benchmark results to fresh hardware evidence (issue 14). Verification needs ``cryptography``;
collecting evidence does not."""
