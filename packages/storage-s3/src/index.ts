/**
 * @wes/storage-s3: WES's blobs (uploaded inputs, produced outputs) in an S3-compatible bucket,
 * through the official AWS SDK: for several instances and for the cloud (docs/deployment.md).
 */
export { isMissing } from "./S3Calls.js"
export { makeS3BlobStore, type S3Transfer } from "./S3BlobStore.js"
export { parseS3Location, type S3Location } from "./S3Location.js"
export { makeS3Client, S3BlobStoreLive, type S3StoreOptions } from "./S3Store.js"
