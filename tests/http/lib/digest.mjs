// BLAKE3 by the reference tool (b3sum), and the bytes a snapshot digest
// covers (extensions 2.2): the u64 LE length of the content type, the
// content type, the body.
import { execFileSync } from 'node:child_process';

export function digestInput(contentType, body) {
    const ct = Buffer.from(contentType, 'utf8');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(ct.length));
    return Buffer.concat([len, ct, body]);
}

export function b3sum(bytes) {
    return execFileSync('b3sum', ['--no-names'], { input: bytes }).toString().trim();
}

// The digest of a snapshot whose body is `bodyPieces` one after another.
export const snapshotDigest = (contentType, ...bodyPieces) =>
    b3sum(digestInput(contentType, Buffer.concat(bodyPieces)));
