"""Lifted-C shapes with the gotos clang 14's switches leave, shared by the tests of the
lifter's goto pass (kbtool/lift/lifter/gotoless.py) and of its cheap look before the scan."""

SWITCH = """\
l1 = 100;
switch (p0 & 15) {
  case 1:
    p0 += 7;
    goto L2;
  case 5:
    if (p0 > 9) goto L2;
    return p0 ^ 85;
  default:
    p0 = -p0;
    L2:;
    l1 = p0 + 1;
  case 0: break;
}
return l1;"""


LOOP = """\
do {
  switch (x & 7) {
    case 0:
      y++;
      break;
    case 2:
      y += z;
      goto L4;
    default:
      y -= 1;
  }
  y &= 65535;
  L4:;
  z--;
} while (n != (x = x + 1));
return y;"""


GUARD = """\
while (1) {
  if (p0 == 6) goto L8;
  switch (p0 - 1) {
    case 0: return 1;
    case 9: continue;
    default: return 2;
  }
  L8:;
  y = f(p1);
  p0 = 12;
}"""
