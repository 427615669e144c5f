#pragma once
// stream_copies.cu: GB/s (bytes read plus bytes written) of copying three fields of nx x ny x nz
// (fp64 or fp32) to three others: columns 0 flat; 1 a column per thread in 32 x 8 blocks; 2 the
// same in 64 x 4 blocks; 3 two columns per thread; 4 four (fp32). 0 when the device refuses.
double three_field_copy_gbs(bool fp64, int columns, int nx, int ny, int nz);
