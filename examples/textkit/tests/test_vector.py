import math

import pytest

from textkit.vector import DimensionError, Matrix, Vector


def test_vector_construction_forms():
    assert Vector(1, 2, 3) == Vector([1, 2, 3]) == Vector((1, 2, 3))
    assert Vector(5).components == (5,)


def test_vector_len_iter_getitem():
    v = Vector(4, 5, 6)
    assert len(v) == 3
    assert list(v) == [4, 5, 6]
    assert v[0] == 4 and v[-1] == 6


def test_vector_add_sub():
    assert Vector(1, 2) + Vector(10, 20) == Vector(11, 22)
    assert Vector(1, 2) - Vector(10, 20) == Vector(-9, -18)


def test_vector_dimension_mismatch():
    with pytest.raises(DimensionError, match="2 != 3"):
        Vector(1, 2) + Vector(1, 2, 3)


def test_vector_sub_dimension_mismatch():
    with pytest.raises(DimensionError, match="3 != 2"):
        Vector(1, 2, 3) - Vector(1, 2)


def test_vector_add_type_error():
    with pytest.raises(TypeError):
        Vector(1, 2) + (1, 2)


def test_vector_scalar_multiplication_both_sides():
    assert Vector(1, -2) * 3 == Vector(3, -6)
    assert 3 * Vector(1, -2) == Vector(3, -6)


def test_vector_times_vector_is_dot():
    assert Vector(1, 2, 3) * Vector(4, 5, 6) == 32


def test_vector_negation():
    assert -Vector(1, -2, 0) == Vector(-1, 2, 0)


def test_vector_equality_and_hash():
    assert Vector(1, 2) != Vector(2, 1)
    assert Vector(1, 2) != (1, 2)
    assert hash(Vector(1, 2)) == hash(Vector(1, 2))
    assert len({Vector(1, 2), Vector(1, 2), Vector(0, 0)}) == 2


def test_vector_repr():
    assert repr(Vector(1, 2.5)) == "Vector(1, 2.5)"


def test_dot_and_norm():
    assert Vector(3, 4).dot(Vector(2, -1)) == 2
    assert Vector(3, 4).norm() == 5.0
    assert Vector(0, 0).norm() == 0.0


def test_dot_mismatch():
    with pytest.raises(DimensionError):
        Vector(1).dot(Vector(1, 2))


def test_cross_product():
    assert Vector(1, 0, 0).cross(Vector(0, 1, 0)) == Vector(0, 0, 1)
    assert Vector(1, 2, 3).cross(Vector(4, 5, 6)) == Vector(-3, 6, -3)


def test_cross_dimension_mismatch():
    with pytest.raises(DimensionError, match="dimension mismatch"):
        Vector(1, 2, 3).cross(Vector(1, 2))


def test_cross_requires_3d():
    with pytest.raises(DimensionError):
        Vector(1, 2).cross(Vector(3, 4))


def test_matrix_shape_and_getitem():
    m = Matrix([[1, 2, 3], [4, 5, 6]])
    assert m.shape == (2, 3)
    assert m[1, 2] == 6
    assert m[0, 1] == 2


def test_matrix_copies_rows():
    rows = [[1, 2], [3, 4]]
    m = Matrix(rows)
    rows[0][0] = 99
    assert m[0, 0] == 1


@pytest.mark.parametrize("rows", [[], [[]], [[1, 2], [3]]])
def test_matrix_invalid(rows):
    with pytest.raises(DimensionError):
        Matrix(rows)


def test_identity():
    assert Matrix.identity(3) == Matrix([[1, 0, 0], [0, 1, 0], [0, 0, 1]])


def test_matrix_add_sub():
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[10, 20], [30, 40]])
    assert a + b == Matrix([[11, 22], [33, 44]])
    assert b - a == Matrix([[9, 18], [27, 36]])


def test_matrix_add_shape_mismatch():
    with pytest.raises(DimensionError):
        Matrix([[1, 2]]) + Matrix([[1], [2]])
    with pytest.raises(DimensionError):
        Matrix([[1, 2]]) - Matrix([[1], [2]])


def test_matrix_multiplication():
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[5, 6], [7, 8]])
    assert a * b == Matrix([[19, 22], [43, 50]])
    assert b * a == Matrix([[23, 34], [31, 46]])


def test_matrix_rectangular_multiplication():
    a = Matrix([[1, 2, 3]])
    b = Matrix([[1], [2], [3]])
    assert a * b == Matrix([[14]])
    assert (b * a).shape == (3, 3)
    assert (b * a)[2, 0] == 3


def test_matrix_multiplication_mismatch():
    with pytest.raises(DimensionError, match="cannot multiply 1x2 by 1x2"):
        Matrix([[1, 2]]) * Matrix([[1, 2]])


def test_matrix_scalar_multiplication():
    m = Matrix([[1, -2], [0, 3]])
    assert m * 2 == Matrix([[2, -4], [0, 6]])
    assert 2 * m == Matrix([[2, -4], [0, 6]])


def test_matrix_vector_multiplication():
    m = Matrix([[1, 2], [3, 4], [5, 6]])
    assert m * Vector(1, -1) == Vector(-1, -1, -1)
    assert m * Vector(2, 1) == Vector(4, 10, 16)


def test_matrix_vector_mismatch():
    with pytest.raises(DimensionError):
        Matrix([[1, 2]]) * Vector(1, 2, 3)


def test_transpose():
    assert Matrix([[1, 2, 3], [4, 5, 6]]).transpose() == Matrix([[1, 4], [2, 5], [3, 6]])


def test_trace():
    assert Matrix([[1, 2], [3, 4]]).trace() == 5
    with pytest.raises(DimensionError):
        Matrix([[1, 2]]).trace()


def test_minor():
    m = Matrix([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert m.minor(0, 0) == Matrix([[5, 6], [8, 9]])
    assert m.minor(1, 2) == Matrix([[1, 2], [7, 8]])
    assert m.minor(2, 1) == Matrix([[1, 3], [4, 6]])


@pytest.mark.parametrize(
    "rows, expected",
    [
        ([[7]], 7),
        ([[1, 2], [3, 4]], -2),
        ([[2, 0, 1], [1, 3, 2], [1, 1, 2]], 6),
        ([[0, 2, 1], [1, 3, 2], [4, 1, 2]], 1),
        ([[3, 1, 2], [0, 4, 1], [5, 2, 0]], -41),
        ([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 0),
        ([[2, 0, 0, 0], [0, 3, 0, 0], [0, 0, 4, 0], [0, 0, 0, 5]], 120),
        ([[1, 2, 0, 0], [3, 4, 0, 0], [0, 0, 1, 1], [0, 0, 0, 2]], -4),
    ],
)
def test_determinant(rows, expected):
    assert Matrix(rows).determinant() == expected


def test_determinant_non_square():
    with pytest.raises(DimensionError):
        Matrix([[1, 2, 3], [4, 5, 6]]).determinant()


def test_matrix_equality_other_type():
    assert Matrix([[1]]) != [[1]]
    assert Matrix([[1, 2]]) != Matrix([[2, 1]])


def test_matrix_repr():
    assert repr(Matrix([[1, 2]])) == "Matrix([[1, 2]])"


def test_norm_of_unit_vectors():
    assert Vector(1, 1).norm() == math.sqrt(2)
