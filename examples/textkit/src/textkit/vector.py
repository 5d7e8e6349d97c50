"""Small Vector and Matrix classes with operator overloads."""

import math


class DimensionError(ValueError):
    pass


class Vector:
    def __init__(self, *components):
        if len(components) == 1 and isinstance(components[0], (list, tuple)):
            components = tuple(components[0])
        self.components = tuple(components)

    def __len__(self):
        return len(self.components)

    def __iter__(self):
        return iter(self.components)

    def __getitem__(self, index):
        return self.components[index]

    def _check(self, other):
        if not isinstance(other, Vector):
            raise TypeError("expected a Vector")
        if len(self) != len(other):
            raise DimensionError("dimension mismatch: %d != %d" % (len(self), len(other)))

    def __add__(self, other):
        self._check(other)
        return Vector([a + b for a, b in zip(self, other)])

    def __sub__(self, other):
        self._check(other)
        return Vector([a - b for a, b in zip(self, other)])

    def __mul__(self, scalar):
        if isinstance(scalar, Vector):
            return self.dot(scalar)
        return Vector([a * scalar for a in self])

    __rmul__ = __mul__

    def __neg__(self):
        return Vector([-a for a in self])

    def __eq__(self, other):
        if not isinstance(other, Vector):
            return NotImplemented
        return self.components == other.components

    def __hash__(self):
        return hash(self.components)

    def __repr__(self):
        return "Vector(%s)" % ", ".join(repr(c) for c in self.components)

    def dot(self, other):
        self._check(other)
        return sum(a * b for a, b in zip(self, other))

    def norm(self):
        return math.sqrt(self.dot(self))

    def cross(self, other):
        self._check(other)
        if len(self) != 3:
            raise DimensionError("cross product needs 3-dimensional vectors")
        a1, a2, a3 = self.components
        b1, b2, b3 = other.components
        return Vector(a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1)


class Matrix:
    def __init__(self, rows):
        rows = [list(r) for r in rows]
        if not rows or not rows[0]:
            raise DimensionError("matrix must be non-empty")
        width = len(rows[0])
        for r in rows:
            if len(r) != width:
                raise DimensionError("ragged rows")
        self.rows = rows

    @classmethod
    def identity(cls, n):
        return cls([[1 if i == j else 0 for j in range(n)] for i in range(n)])

    @property
    def shape(self):
        return (len(self.rows), len(self.rows[0]))

    def __getitem__(self, pos):
        i, j = pos
        return self.rows[i][j]

    def __eq__(self, other):
        if not isinstance(other, Matrix):
            return NotImplemented
        return self.rows == other.rows

    def __repr__(self):
        return "Matrix(%r)" % (self.rows,)

    def __add__(self, other):
        if self.shape != other.shape:
            raise DimensionError("shape mismatch")
        return Matrix([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(self.rows, other.rows)])

    def __sub__(self, other):
        if self.shape != other.shape:
            raise DimensionError("shape mismatch")
        return Matrix([[a - b for a, b in zip(r1, r2)] for r1, r2 in zip(self.rows, other.rows)])

    def __mul__(self, other):
        if isinstance(other, Matrix):
            return self.matmul(other)
        if isinstance(other, Vector):
            if len(other) != self.shape[1]:
                raise DimensionError("vector length must equal column count")
            return Vector([sum(a * b for a, b in zip(row, other)) for row in self.rows])
        return Matrix([[a * other for a in row] for row in self.rows])

    def __rmul__(self, scalar):
        return self * scalar

    def matmul(self, other):
        n, m = self.shape
        m2, p = other.shape
        if m != m2:
            raise DimensionError("cannot multiply %dx%d by %dx%d" % (n, m, m2, p))
        result = []
        for i in range(n):
            row = []
            for j in range(p):
                total = 0
                for k in range(m):
                    total += self.rows[i][k] * other.rows[k][j]
                row.append(total)
            result.append(row)
        return Matrix(result)

    def transpose(self):
        n, m = self.shape
        return Matrix([[self.rows[i][j] for i in range(n)] for j in range(m)])

    def trace(self):
        n, m = self.shape
        if n != m:
            raise DimensionError("trace needs a square matrix")
        return sum(self.rows[i][i] for i in range(n))

    def minor(self, i, j):
        return Matrix([row[:j] + row[j + 1:] for k, row in enumerate(self.rows) if k != i])

    def determinant(self):
        n, m = self.shape
        if n != m:
            raise DimensionError("determinant needs a square matrix")
        if n == 1:
            return self.rows[0][0]
        total = 0
        for j in range(n):
            sign = -1 if j % 2 else 1
            total += sign * self.rows[0][j] * self.minor(0, j).determinant()
        return total
