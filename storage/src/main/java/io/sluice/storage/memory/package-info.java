/**
 * The broker's resident memory for mapped files: dropping pages that are written and will not be
 * touched again from the process's mappings, so that what a queue has written is the kernel's page
 * cache, reclaimable, and not the broker's RSS.
 */
package io.sluice.storage.memory;
