-- Example inventory for the MariaDB/MySQL example adapter (scripts/seed_examples.py mariadb).
-- Runs inside the database named on the command line, so it never touches other tables.
CREATE TABLE warehouses (
  code VARCHAR(3) PRIMARY KEY,
  city VARCHAR(64) NOT NULL,
  opened_on DATE NOT NULL
);
CREATE TABLE products (
  id INT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  category VARCHAR(32) NOT NULL,
  price DECIMAL(10, 2) NOT NULL,
  in_stock BOOLEAN NOT NULL,
  warehouse VARCHAR(3) NOT NULL,
  pick_time TIME NOT NULL,
  updated_at DATETIME NOT NULL,
  FOREIGN KEY (warehouse) REFERENCES warehouses(code)
);
INSERT INTO warehouses VALUES
  ('AMS', 'Amsterdam', '2015-03-01'), ('BER', 'Berlin', '2018-09-15'), ('LYS', 'Lyon', '2021-01-10');
INSERT INTO products VALUES
  (1, 'Oak desk', 'furniture', 349.00, true, 'AMS', '00:04:30', '2024-05-01 09:30:00'),
  (2, 'Desk lamp', 'lighting', 39.90, true, 'AMS', '00:01:00', '2024-05-02 10:00:00'),
  (3, 'Office chair', 'furniture', 219.50, false, 'BER', '00:03:00', '2024-05-03 11:15:00'),
  (4, 'Floor lamp', 'lighting', 89.99, true, 'BER', '00:01:30', '2024-05-04 08:00:00'),
  (5, 'Bookshelf', 'furniture', 159.00, true, 'LYS', '00:06:00', '2024-05-05 16:45:00'),
  (6, 'Monitor arm', 'accessories', 74.25, true, 'LYS', '00:00:45', '2024-05-06 12:00:00');
